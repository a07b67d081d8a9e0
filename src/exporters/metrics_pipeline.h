#pragma once
// The metrics pipeline of one process, built from its resolved settings:
// the meter provider, the exporter the settings choose (OTLP or console) and one periodic
// reader, plus the Prometheus endpoint when `prometheus.port` is set (in addition to the
// exporter, never instead of it). With metrics inactive (enabled false, metrics_enabled false or
// OTEL_SDK_DISABLED) the provider is disabled: its instruments are empty handles and no thread or
// endpoint is started.
//
// Create it at process start, before the HTTP client pool; call shutdown() on orderly exit
// (bounded to 5 s: docs/design/telemetry-contract.md#shutdown-flush). Thread-safety: as
// MeterProvider and PeriodicReader.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "exporters/otlp/otlp_metric_exporter.h"
#include "exporters/prometheus/prometheus_endpoint.h"
#include "telemetry/config.h"
#include "telemetry/metrics/meter_provider.h"
#include "telemetry/metrics/periodic_reader.h"
#include "telemetry/process_telemetry.h"
#include "telemetry/resource.h"

namespace gym::exporters {

class MetricsPipeline final : public telemetry::MetricsPipelineBase {
 public:
  // Throws core::ConfigError for invalid OTLP settings and std::runtime_error when the console
  // file cannot be opened or the Prometheus port cannot be bound (the message names the port and
  // the process role).
  MetricsPipeline(const telemetry::TelemetrySettings& settings,
                  const telemetry::ProcessIdentity& identity, const std::string& run_id,
                  const telemetry::GetEnv& getenv);
  ~MetricsPipeline() override;  // shutdown() unless done
  MetricsPipeline(const MetricsPipeline&) = delete;
  MetricsPipeline& operator=(const MetricsPipeline&) = delete;

  telemetry::MeterProvider& provider() noexcept override { return *provider_; }
  bool active() const noexcept { return reader_ != nullptr; }
  // The bound port of the Prometheus endpoint; 0 when it is not running.
  std::uint16_t prometheus_port() const noexcept;

  bool force_flush(std::chrono::milliseconds wait = telemetry::kShutdownBound) override;
  // Final collect-and-export, then the Prometheus endpoint stops.
  bool shutdown(std::chrono::milliseconds wait = telemetry::kShutdownBound) override;

  // What the pipeline did so far: the reader's exports and failures and, with the OTLP exporter,
  // its sent, dropped and retried counts (drops are logged, never exported:
  // docs/design/telemetry-contract.md#not-exported).
  // After shutdown(): the figures at the end of shutdown. All zero when inactive.
  struct Stats {
    telemetry::PeriodicReader::Stats reader;
    std::optional<OtlpMetricExporter::Stats> otlp;  // nullopt unless the exporter is OTLP
  };
  Stats stats() const;

 private:
  std::unique_ptr<telemetry::MeterProvider> provider_;
  std::unique_ptr<telemetry::PeriodicReader> reader_;  // null when inactive
  const OtlpMetricExporter* otlp_ = nullptr;        // owned by reader_; valid while reader_ is set
  Stats final_stats_;                               // taken by shutdown()
  std::unique_ptr<PrometheusEndpoint> prometheus_;  // null unless prometheus.port is set
};

// Checks the settings of the exporter `settings` choose, without starting anything: with metrics
// active and the OTLP exporter, the OTLP settings (resolve_otlp). Throws core::ConfigError naming
// the key or variable, the same error MetricsPipeline's constructor would throw.
void check_exporter_settings(const telemetry::TelemetrySettings& settings,
                             const telemetry::GetEnv& getenv);

// A MetricsPipeline, as a telemetry::PipelineFactory::Build.
std::unique_ptr<telemetry::MetricsPipelineBase> make_metrics_pipeline(
    const telemetry::TelemetrySettings& settings, const telemetry::ProcessIdentity& identity,
    const std::string& run_id, const telemetry::GetEnv& getenv);

// The span exporter the settings choose (OTLP or console), as a PipelineFactory::BuildSpans.
std::unique_ptr<telemetry::SpanExporter> make_span_exporter(
    const telemetry::TelemetrySettings& settings, const telemetry::ProcessIdentity& identity,
    const std::string& run_id, const telemetry::GetEnv& getenv);

// The OTLP log-record exporter, as a PipelineFactory::BuildLogs.
std::unique_ptr<telemetry::LogExporter> make_log_exporter(
    const telemetry::TelemetrySettings& settings, const telemetry::ProcessIdentity& identity,
    const std::string& run_id, const telemetry::GetEnv& getenv);

// The telemetry::PipelineFactory of the `gym` binary: check_exporter_settings,
// make_metrics_pipeline, make_span_exporter and make_log_exporter.
telemetry::PipelineFactory metrics_pipelines();

}  // namespace gym::exporters
