#pragma once
// A whole collection (runtime.md 7.4-7.9): the rows of a Plan dispatched on an event loop of
// their own, then the aggregate metrics, while the calling thread supervises.
#include "rollouts/options.h"
#include "rollouts/plan.h"
#include "telemetry/process_telemetry.h"

#include <boost/json/object.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <string>

namespace gym::rollouts {

// Called every 100 ms while the collection runs: 0 to go on, else an exit code that stops it
// (e.g. 130 after SIGINT, 2 when a server died).
using Supervisor = std::function<int(std::chrono::milliseconds wait)>;

// Runs `plan` against `agent_urls` (agent instance -> "http://host:port") with a client built
// from the global_aiohttp_* keys of `client_config`, recording pool metrics and spans (the
// `gym.job` span, CLIENT spans) into `telemetry`.
// Returns the exit code of runtime.md 9.5: 0, 2 (collector or aggregate failure), 3 (failed or
// undispatched rows), or the supervisor's code. Written rows always stay.
int run_collection(const boost::json::object& client_config,
                   std::map<std::string, std::string> agent_urls, Plan plan,
                   const CollectionOptions& options, const OutputPaths& paths,
                   telemetry::ProcessTelemetry& telemetry, const Supervisor& supervise);

}  // namespace gym::rollouts
