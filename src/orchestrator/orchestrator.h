#pragma once
// `gym env start` and `gym env status` (docs/design/processes.md), and the deployment that `gym
// eval run` starts around a collection.
#include "core/config.h"
#include "telemetry/process_telemetry.h"

#include <boost/json/object.hpp>

#include <chrono>
#include <memory>

namespace gym::orchestrator {

// The head server and one process per configured server instance. SIGINT, SIGTERM and SIGCHLD
// are blocked in the thread that calls start() and taken by poll(); threads started after
// start() inherit the mask. Servers die with that thread (PR_SET_PDEATHSIG).
class Deployment {
 public:
  // `pipelines` builds the orchestrator's own metrics pipeline (its role: `orchestrator`);
  // `implementations` are the built-in implementations a config may name.
  Deployment(const core::ConfigSources& sources, telemetry::PipelineFactory pipelines,
             core::ImplCatalog implementations);
  ~Deployment();  // shuts down what is still running

  // Merges and validates the config (ConfigError), assigns ports, starts the head server and
  // every server, waits for readiness and the model endpoints. Returns 0 when all are ready,
  // else the exit code (2, 130, 143).
  int start();
  // The merged config with the assigned hosts and ports (valid after start()).
  const boost::json::object& config() const;
  // The orchestrator's telemetry (valid after start() got past config validation, else null).
  // A collection inside this process records its pool metrics here.
  telemetry::ProcessTelemetry* telemetry();
  // Waits up to `wait` for SIGINT/SIGTERM (returns 130/143) or a server exit (reports it, returns
  // 2); 0 when neither happened.
  int poll(std::chrono::milliseconds wait);
  // docs/design/processes.md#shutdown-order: stops the memory sampler, sets gym.servers.active to 0
  // and flushes, then SIGTERM, grace period, SIGKILL of the process groups; idempotent.
  void shutdown();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Starts the deployment and supervises it until a signal or a server exit. Returns the exit code.
int run_env_start(const core::ConfigSources& sources, const telemetry::PipelineFactory& pipelines,
                  const core::ImplCatalog& implementations);

// Lists the servers of a running deployment from its head server and probes each one.
int run_env_status(const core::ConfigSources& sources, bool json);

}  // namespace gym::orchestrator
