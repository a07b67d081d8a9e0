#pragma once
// A whole collection (docs/guides/evaluation.md): the rows of a Plan dispatched on an event loop of
// their own, then the aggregate metrics, while the calling thread supervises.
#include "rollouts/collector.h"
#include "rollouts/options.h"
#include "rollouts/plan.h"
#include "telemetry/process_telemetry.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace gym::rollouts {

// Called every 100 ms while the collection runs: 0 to go on, else an exit code that stops it
// (e.g. 130 after SIGINT, 2 when a server died).
using Supervisor = std::function<int(std::chrono::milliseconds wait)>;

// What a run did, for the machine-readable summary of `gym eval run --json`.
struct CollectionReport {
  std::size_t total = 0;            // rollouts of the run (materialized)
  std::size_t earlier_results = 0;  // results a --resume kept from earlier runs
  CollectionCounts counts;          // this run's
  std::string stop_reason;          // why the run stopped before its end, when it did
  std::string error;                // the collector's own failure, or one before the collection
  std::string resume_command;       // what completes the run, when something would
  std::optional<std::filesystem::path> aggregate_metrics;
  boost::json::array aggregate_entries;              // agent_ref, key_metrics, ... per agent
  std::optional<std::filesystem::path> server_logs;  // the folder of <server>.log (-q)

  // Fills total and earlier_results from the plan about to run.
  void planned(const Plan& plan);
};

// Runs `plan` against `agent_urls` (agent instance -> "http://host:port") with a client built
// from the global_aiohttp_* keys of `client_config`, recording pool metrics and spans (the
// `gym.job` span, CLIENT spans) into `telemetry`.
// Returns the exit code (docs/design/failures-and-retries.md#exit-codes): 0, 2 (collector or
// aggregate failure), 3 (failed or undispatched rows), or the supervisor's code. Written rows
// always stay. `report`, when given, receives what happened (gym eval run --json).
int run_collection(const boost::json::object& client_config,
                   std::map<std::string, std::string> agent_urls, Plan plan,
                   const CollectionOptions& options, const OutputPaths& paths,
                   telemetry::ProcessTelemetry& telemetry, const Supervisor& supervise,
                   CollectionReport* report = nullptr);

// The summary as one JSON object: exit_code, rollouts {total, dispatched, succeeded, failed,
// earlier_results, without_result, context_length_exceeded}, failure_causes [{cause, rollouts}],
// key_metrics {agent: {...}}, files {...}, stop_reason, resume_command, error (null when none).
boost::json::object report_json(const CollectionReport& report, const OutputPaths& paths,
                                int exit_code);

}  // namespace gym::rollouts
