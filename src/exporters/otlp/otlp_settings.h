#pragma once
// The OTLP/HTTP exporter settings of one signal (telemetry.md 7.2): OTEL_EXPORTER_OTLP_<SIGNAL>_*
// over OTEL_EXPORTER_OTLP_* over the `telemetry:` block's otlp_* keys over the defaults. Every
// invalid value is a core::ConfigError whose message names the variable or the key (T1); nothing
// silently falls back to a default. A process checks them at startup through
// check_exporter_settings() (metrics_pipeline.h).
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "telemetry/config.h"

namespace gym::exporters {

enum class OtlpProtocol { http_protobuf, http_json };
enum class Compression { none, gzip };
enum class Signal { metrics, traces };

struct OtlpSettings {
  OtlpProtocol protocol = OtlpProtocol::http_protobuf;
  std::string url;  // e.g. http://localhost:4318/v1/metrics
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds timeout{10'000};
  Compression compression = Compression::none;
};

// The settings of `signal`: the signal-specific OTEL_EXPORTER_OTLP_<SIGNAL>_* variable, then
// OTEL_EXPORTER_OTLP_*, then telemetry.otlp_* (protocol, endpoint, headers), then the default.
// `grpc` and any other unknown protocol, a URL that is not http(s), a header entry that is not
// key=value, a non-positive timeout and an unknown compression are ConfigErrors.
OtlpSettings resolve_otlp(const telemetry::TelemetrySettings& settings,
                          const telemetry::GetEnv& getenv, Signal signal = Signal::metrics);

}  // namespace gym::exporters
