#pragma once
// What a deployment decides before anything runs (docs/design/processes.md#start-up): the merged
// config with every server's host and port, where each server runs, and the environment every
// server gets. Deployment::start() carries it out; nothing here starts a process or a server.
#include "core/config.h"
#include "orchestrator/placement.h"
#include "orchestrator/ports.h"
#include "telemetry/config.h"
#include "telemetry/process_telemetry.h"

#include <boost/json/object.hpp>

#include <string>
#include <vector>

namespace gym::orchestrator {

struct DeploymentPlan {
  boost::json::object config;                   // merged, hosts and ports set, run id recorded
  std::vector<core::ServerInstance> instances;  // as `config` has them
  Placement placement;                          // none: every server on this machine
  // The ports chosen for the servers, held until they listen: a deployment starting beside this
  // one cannot choose them meanwhile.
  std::vector<PortHold> port_holds;
  telemetry::TelemetrySettings telemetry;
  std::string run_id;
  std::vector<std::string> child_env;  // KEY=VALUE, for every server
};

// Loads and checks the config (every problem a core::ConfigError, before anything starts),
// places the servers (use_absolute_ip: over a Slurm allocation's nodes), chooses their ports
// (clear of the Prometheus ports when that endpoint is on) and their environment (the run id, the
// shutdown bound, the deployment's session-cookie key). Non-loopback listen hosts are warned
// about.
DeploymentPlan plan_deployment(const core::ConfigSources& sources,
                               const core::ImplCatalog& implementations,
                               const telemetry::PipelineFactory& pipelines,
                               const telemetry::GetEnv& getenv);

}  // namespace gym::orchestrator
