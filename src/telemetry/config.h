#pragma once
// Telemetry settings of one process (docs/design/telemetry-contract.md#settings): the `telemetry:`
// block of the merged config, overridden per key by NEMO_GYM_OTEL_<KEY> > NEMO_LENS_<KEY>, the
// standard OTEL_* variables, span-group resolution and the run id. Every invalid value is a
// core::ConfigError whose message names the key or the variable; nothing silently falls back to a
// default. The OTLP settings are resolved beside the exporter (exporters/otlp/otlp_settings.h).
#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>

#include "core/config.h"
#include "telemetry/common/batch_settings.h"
#include "telemetry/common/env.h"
#include "telemetry/traces/sampler.h"
#include "telemetry/traces/span_groups.h"

namespace gym::telemetry {

// ---- Settings ----

enum class ExporterKind { otlp, console };

struct TelemetrySettings {
  bool enabled = false;                            // enabled
  std::string service_name = "nemo-gym";           // service_name (OTEL_SERVICE_NAME)
  bool service_name_per_server = true;             // service_name_per_server
  std::string span_groups = "default";             // span_groups, as given
  SpanGroups span_group_set;                       // span_groups, resolved
  ExporterKind exporter = ExporterKind::otlp;      // exporter: otlp or console
  bool traces_enabled = true;                      // traces_enabled
  bool metrics_enabled = true;                     // metrics_enabled
  bool logs_enabled = false;                       // logs_enabled: OTLP log records
  std::optional<std::string> run_id;               // run_id, before resolve_run_id's fallbacks
  std::optional<std::string> user_id;              // NEMO_GYM_OTEL_USER_ID / NEMO_LENS_USER_ID
  bool memory_profiling_enabled = false;           // memory_profiling.enabled
  double memory_profiling_interval_seconds = 1.0;  // memory_profiling.interval_seconds, > 0
  std::optional<std::string> otlp_endpoint;        // otlp_endpoint (fallback of OTEL_*)
  std::optional<std::string> otlp_protocol;        // otlp_protocol
  std::optional<std::string> otlp_headers;         // otlp_headers
  bool instrument_aiohttp = true;                  // instrument_aiohttp (no effect)
  std::optional<int> prometheus_port;              // prometheus.port, 1..65535
  std::string prometheus_host = "127.0.0.1";       // prometheus.host
  std::optional<std::string> console_path;         // console_path
  bool sdk_disabled = false;                       // OTEL_SDK_DISABLED
  // OTEL_METRIC_EXPORT_INTERVAL (ms, > 0) and OTEL_METRIC_EXPORT_TIMEOUT (ms, > 0, at most the
  // interval; default min(30000, interval)).
  std::chrono::milliseconds export_interval{10'000};
  std::chrono::milliseconds export_timeout{10'000};
  // OTEL_TRACES_SAMPLER(_ARG) and OTEL_BSP_*; read only when traces are active, so a variable meant
  // for another SDK cannot stop a run that exports no span.
  Sampler sampler;
  BatchSettings span_batch;
  // OTEL_BLRP_* (schedule delay 1000 ms), read only when logs are active.
  BatchSettings log_batch;
  // Lines to log once at startup: unknown keys of the block, logs_enabled without effect.
  std::vector<std::string> warnings;

  // Telemetry is on in this process (OTEL_SDK_DISABLED wins over `enabled`).
  bool active() const noexcept { return enabled && !sdk_disabled; }
  bool metrics_active() const noexcept { return active() && metrics_enabled; }
  bool traces_active() const noexcept { return active() && traces_enabled; }
  // Log records go out over OTLP (the console exporter has none: they are on stdout already).
  bool logs_active() const noexcept {
    return active() && logs_enabled && exporter == ExporterKind::otlp;
  }
};

// Resolves every key of the `telemetry:` block with its precedence
// (docs/reference/telemetry.md#every-key-and-variable) from `config` (the merged config; its
// `telemetry` block may be absent or null) and `getenv`. Throws core::ConfigError.
// The OTLP settings (otlp_endpoint, otlp_protocol, otlp_headers and OTEL_EXPORTER_OTLP_*) are
// checked by the exporters (exporters::check_exporter_settings, through
// resolve_checked_settings() in process_telemetry.h).
TelemetrySettings resolve_settings(const boost::json::object& config, const GetEnv& getenv);

// ---- Run id (docs/design/telemetry-contract.md#settings) ----

// The first 12 lowercase hex digits of a random UUIDv4.
std::string generate_run_id();

// The effective run id: settings.run_id (already NEMO_GYM_OTEL_RUN_ID > NEMO_LENS_RUN_ID >
// telemetry.run_id) > `served_run_id` (a --no-serve collector passes the served config's
// telemetry.run_id) > SLURM_JOB_ID > generate_run_id().
std::string resolve_run_id(const TelemetrySettings& settings, const GetEnv& getenv,
                           const std::optional<std::string>& served_run_id = std::nullopt);

// The telemetry variables the orchestrator adds to its children's environment: exactly
// NEMO_GYM_OTEL_RUN_ID = run_id when telemetry is active, else nothing.
std::vector<std::pair<std::string, std::string>> child_environment(
    const TelemetrySettings& settings, const std::string& run_id);

}  // namespace gym::telemetry
