#pragma once
// Before collection starts, every `*base_url` of a model server block must answer
// (docs/design/processes.md#readiness), and a live model server's `<base_url>/models` must list
// its model (model_preflight.h), so a wrong URL or model name stops the start instead of failing
// every rollout. vLLM loads for minutes: the wait says why it waits now and then.
#include "core/config.h"

#include <boost/json/object.hpp>

#include <chrono>
#include <functional>
#include <vector>

namespace gym::orchestrator {

// Waits up to `wait` for a termination signal: its exit code, or 0.
using SignalWait = std::function<int(std::chrono::milliseconds wait)>;

// Probes the model endpoints of `instances` in turn, each every 3 s until it answers, all within
// model_endpoint_readiness_timeout_seconds of `cfg` (0: no wait), then checks each answer when
// model_endpoint_preflight is on. 0 when every endpoint is ready; 2 after saying on stderr why one
// is not (no http(s) URL, a name that does not resolve, a certificate we refuse, no answer in
// time, a preflight failure); a signal's exit code when one came.
int wait_for_model_endpoints(const boost::json::object& cfg,
                             const std::vector<core::ServerInstance>& instances,
                             const SignalWait& take_signal);

}  // namespace gym::orchestrator
