#pragma once
// Test support, header-only: the environment that points a process's telemetry at the recording
// collector of a test. For gym_telemetry_recorder (tests/support/telemetry_recorder.cpp), which
// sets telemetry up from its environment as every gym process does, and for `gym` deployments.
#include <string>
#include <vector>

namespace gym::test {

// Telemetry on (NEMO_GYM_OTEL_ENABLED=1), exported over `protocol` to `endpoint`
// (OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_ENDPOINT) every `interval_ms`
// (OTEL_METRIC_EXPORT_INTERVAL). Every other variable that turns telemetry or one of its signals
// on or off, picks the exporter, or says where, how and as whom it exports is set empty (empty
// counts as unset, as for every telemetry variable): whatever the developer's shell exports does
// not change the setup under test. Variables appended after these win (ChildProcess and env(1) set
// them in order).
inline std::vector<std::string> collector_env(const std::string& endpoint,
                                              const std::string& protocol, int interval_ms) {
  std::vector<std::string> env{"NEMO_GYM_OTEL_ENABLED=1", "OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint,
                               "OTEL_EXPORTER_OTLP_PROTOCOL=" + protocol,
                               "OTEL_METRIC_EXPORT_INTERVAL=" + std::to_string(interval_ms)};
  for (const char* name : {"NEMO_LENS_ENABLED",
                           "OTEL_SDK_DISABLED",
                           "NEMO_GYM_OTEL_EXPORTER",
                           "NEMO_LENS_EXPORTER",
                           "NEMO_GYM_OTEL_METRICS_ENABLED",
                           "NEMO_LENS_METRICS_ENABLED",
                           "NEMO_GYM_OTEL_TRACES_ENABLED",
                           "NEMO_LENS_TRACES_ENABLED",
                           "NEMO_GYM_OTEL_LOGS_ENABLED",
                           "NEMO_LENS_LOGS_ENABLED",
                           "NEMO_GYM_OTEL_SPAN_GROUPS",
                           "NEMO_LENS_SPAN_GROUPS",
                           "OTEL_TRACES_SAMPLER",
                           "OTEL_TRACES_SAMPLER_ARG",
                           "NEMO_GYM_OTEL_RUN_ID",
                           "NEMO_LENS_RUN_ID",
                           "SLURM_JOB_ID",
                           "NEMO_GYM_OTEL_USER_ID",
                           "NEMO_LENS_USER_ID",
                           "NEMO_GYM_OTEL_PROMETHEUS_PORT",
                           "NEMO_GYM_OTEL_PROMETHEUS_HOST",
                           "NEMO_GYM_OTEL_CONSOLE_PATH",
                           "NEMO_GYM_OTEL_SERVICE_NAME_PER_SERVER",
                           "NEMO_GYM_OTEL_MEMORY_PROFILING_ENABLED",
                           "OTEL_SERVICE_NAME",
                           "OTEL_RESOURCE_ATTRIBUTES",
                           "OTEL_METRIC_EXPORT_TIMEOUT"})
    env.push_back(std::string(name) + "=");
  // OTEL_EXPORTER_OTLP_[<SIGNAL>_]<SETTING>, but the general endpoint and protocol set above.
  for (const std::string signal : {"", "METRICS_", "TRACES_", "LOGS_"})
    for (const std::string setting :
         {"ENDPOINT", "PROTOCOL", "HEADERS", "TIMEOUT", "COMPRESSION", "INSECURE", "CERTIFICATE",
          "CLIENT_CERTIFICATE", "CLIENT_KEY"})
      if (!signal.empty() || (setting != "ENDPOINT" && setting != "PROTOCOL"))
        env.push_back("OTEL_EXPORTER_OTLP_" + signal + setting + "=");
  return env;
}

}  // namespace gym::test
