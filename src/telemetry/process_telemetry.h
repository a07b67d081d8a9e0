#pragma once
// The telemetry of one process (docs/design/processes.md#telemetry-in-each-process): its resolved
// settings, run id and identity, the metrics pipeline that exports its provider, and the
// gym_metrics facade of its role. Create it at process start, before the HTTP client pool (so the
// pool's metrics exist from its first call); call shutdown() on orderly exit (bounded to 5 s).
//
// The pipeline comes from a factory because the exporters live above the HTTP
// layer (docs/architecture.md): the `gym` binary passes exporters::metrics_pipelines() down to the
// components that start processes.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "telemetry/config.h"
#include "telemetry/logs/log_bridge.h"
#include "telemetry/metrics/gym_metrics.h"
#include "telemetry/metrics/meter_provider.h"
#include "telemetry/metrics/periodic_reader.h"
#include "telemetry/resource.h"
#include "telemetry/traces/batch_span_processor.h"
#include "telemetry/traces/tracer.h"

namespace gym::telemetry {

// A process's provider and whatever exports it. Thread-safety: as
// MeterProvider; force_flush and shutdown may be called from any thread.
class MetricsPipelineBase {
 public:
  MetricsPipelineBase() = default;
  virtual ~MetricsPipelineBase() = default;
  MetricsPipelineBase(const MetricsPipelineBase&) = delete;
  MetricsPipelineBase& operator=(const MetricsPipelineBase&) = delete;

  virtual MeterProvider& provider() noexcept = 0;
  virtual bool force_flush(std::chrono::milliseconds wait) = 0;
  // Final collect and export; idempotent.
  virtual bool shutdown(std::chrono::milliseconds wait) = 0;
};

// What the `gym` binary hands down (exporters::metrics_pipelines()): how to check the
// settings of the exporter a process will use, and how to build its pipeline.
struct PipelineFactory {
  // Throws core::ConfigError when the settings of the exporter that `settings` choose are
  // invalid (e.g. an OTEL_EXPORTER_OTLP_* value); starts nothing. May be empty: nothing to check.
  using Check = std::function<void(const TelemetrySettings&, const GetEnv&)>;
  // Builds the pipeline of a process; throws core::ConfigError (invalid settings) or
  // std::runtime_error (a file or port that cannot be opened). May be empty: no pipeline.
  using Build = std::function<std::unique_ptr<MetricsPipelineBase>(
      const TelemetrySettings&, const ProcessIdentity&, const std::string& run_id, const GetEnv&)>;

  // The span exporter of a process whose traces are active (OTLP or console);
  // throws like Build. May be empty: no spans are exported.
  using BuildSpans = std::function<std::unique_ptr<SpanExporter>(
      const TelemetrySettings&, const ProcessIdentity&, const std::string& run_id, const GetEnv&)>;

  // The log-record exporter of a process whose logs are active; throws like Build. May be empty: no
  // log records are exported.
  using BuildLogs = std::function<std::unique_ptr<LogExporter>(
      const TelemetrySettings&, const ProcessIdentity&, const std::string& run_id, const GetEnv&)>;

  Check check;
  Build build;
  BuildSpans build_spans;
  BuildLogs build_logs;
};

// resolve_settings(), then the factory's check of the exporter settings: every telemetry value
// of a process is checked when it starts, before it serves or spawns anything (an invalid value is
// a start-up error, never telemetry silently off). Throws core::ConfigError.
TelemetrySettings resolve_checked_settings(const boost::json::object& config, const GetEnv& getenv,
                                           const PipelineFactory& pipelines);

// A deployment's shutdown has one bound in all, kShutdownBound: the orchestrator flushes for at
// most kSignalFlushBound before it signals its servers, and gives them the rest for their final
// export through this variable (milliseconds), while its own last export runs side by side.
inline constexpr char kShutdownBoundVariable[] = "GYM_TELEMETRY_SHUTDOWN_MS";
inline constexpr std::chrono::milliseconds kSignalFlushBound{1000};

// The bound of this process's final export: kShutdownBoundVariable, at most kShutdownBound;
// kShutdownBound when it is unset or blank. Read like the other variables of milliseconds
// (first_env, parse_positive_ms): anything but a positive whole number is a core::ConfigError
// naming the variable, so a server reads it when it starts (an invalid value is a start-up error),
// not at its shutdown.
std::chrono::milliseconds shutdown_bound(const GetEnv& getenv);

class ProcessTelemetry {
 public:
  // With metrics inactive (or no factory) the provider is disabled and nothing
  // is started.
  ProcessTelemetry(const PipelineFactory& factory, TelemetrySettings settings,
                   ProcessIdentity identity, std::string run_id, ProcessRole role,
                   const GetEnv& getenv = process_env());
  ~ProcessTelemetry();  // shutdown()
  ProcessTelemetry(const ProcessTelemetry&) = delete;
  ProcessTelemetry& operator=(const ProcessTelemetry&) = delete;

  const TelemetrySettings& settings() const noexcept { return settings_; }
  const std::string& run_id() const noexcept { return run_id_; }
  const ProcessIdentity& identity() const noexcept { return identity_; }
  GymMetrics& metrics() noexcept { return *metrics_; }
  bool metrics_active() const noexcept { return pipeline_ != nullptr; }
  // The process's tracer: every group off when traces are inactive or no span group is set, so
  // sites start nothing.
  const Tracer& tracer() const noexcept { return *tracer_; }
  Tracer& tracer() noexcept { return *tracer_; }
  // The span processor's figures; nullopt when no span is exported.
  std::optional<BatchSpanProcessor::Stats> span_stats() const;
  // The log-record processor's figures; nullopt when no log record is exported.
  std::optional<BatchProcessor<LogRecordData>::Stats> log_stats() const;

  bool force_flush(std::chrono::milliseconds wait = kShutdownBound);
  bool shutdown(std::chrono::milliseconds wait = kShutdownBound);

 private:
  TelemetrySettings settings_;
  ProcessIdentity identity_;
  std::string run_id_;
  std::unique_ptr<MetricsPipelineBase> pipeline_;  // null when metrics are inactive
  std::unique_ptr<MeterProvider> disabled_;        // the provider when pipeline_ is null
  std::unique_ptr<GymMetrics> metrics_;            // observable callbacks point into it
  std::unique_ptr<BatchSpanProcessor> spans_;      // null unless spans are exported
  std::unique_ptr<Tracer> tracer_;                 // uses spans_
  std::unique_ptr<LogBridge> logs_;                // null unless log records are exported
  bool shut_down_ = false;
};

}  // namespace gym::telemetry
