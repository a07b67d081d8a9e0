#pragma once
// The resource of a process (docs/design/telemetry-contract.md#resource-attributes): who reports,
// in which run, on which host.
#include <optional>
#include <string>

#include "telemetry/config.h"
#include "telemetry/metrics/metric_data.h"

namespace gym::telemetry {

// The NeMo Gym release whose wire protocol and telemetry this build implements (`nemo.gym.version`;
// gym-cpp's own version is `service.version`).
inline constexpr std::string_view kNemoGymVersion = "0.7.0";

// The role of the reporting process (docs/design/telemetry-contract.md#process-roles): server name
// and type, e.g.
// {"mcqa", "resources_servers"}, {"orchestrator", "orchestrator"}.
struct ProcessIdentity {
  std::string server_name;
  std::string server_type;
};

// Host facts, injectable for tests; `current_host()` reads the running process.
struct HostFacts {
  std::string host_name;
  long pid = 0;
};
HostFacts current_host();

// Every resource attribute of the telemetry contract. `run_id` is the effective run id
// (resolve_run_id). OTEL_RESOURCE_ATTRIBUTES (comma-separated key=value, values percent-decoded)
// has the lowest precedence; a malformed value is ignored as a whole with one warning, as the
// OpenTelemetry specification asks.
Resource build_resource(const TelemetrySettings& settings, const std::string& run_id,
                        const ProcessIdentity& identity, const GetEnv& getenv,
                        const HostFacts& host = current_host());

}  // namespace gym::telemetry
