#include "exporters/metrics_pipeline.h"

#include <spdlog/spdlog.h>

#include "exporters/console/console_exporter.h"
#include "exporters/otlp/otlp_batch_exporter.h"
#include "exporters/otlp/otlp_metric_exporter.h"
#include "exporters/otlp/otlp_settings.h"

namespace gym::exporters {

MetricsPipeline::MetricsPipeline(const telemetry::TelemetrySettings& settings,
                                 const telemetry::ProcessIdentity& identity,
                                 const std::string& run_id, const telemetry::GetEnv& getenv) {
  telemetry::MeterProviderOptions options;
  options.enabled = settings.metrics_active();
  if (options.enabled) {
    options.resource = telemetry::build_resource(settings, run_id, identity, getenv);
  }
  provider_ = std::make_unique<telemetry::MeterProvider>(std::move(options));
  if (!settings.metrics_active()) return;

  std::unique_ptr<telemetry::MetricExporter> exporter;
  if (settings.exporter == telemetry::ExporterKind::console) {
    exporter = std::make_unique<ConsoleExporter>(settings.console_path);
  } else {
    auto otlp = std::make_unique<OtlpMetricExporter>(
        resolve_otlp(settings, getenv, Signal::metrics), settings.export_interval);
    otlp_ = otlp.get();
    exporter = std::move(otlp);
  }
  // Bound before the reader starts: a busy port fails startup with no thread running.
  if (settings.prometheus_port) {
    PrometheusEndpointOptions endpoint;
    endpoint.host = settings.prometheus_host;
    endpoint.port = static_cast<std::uint16_t>(*settings.prometheus_port);
    endpoint.role = identity.server_name == identity.server_type
                        ? identity.server_name
                        : identity.server_name + " (" + identity.server_type + ")";
    prometheus_ = std::make_unique<PrometheusEndpoint>(*provider_, std::move(endpoint));
    spdlog::info("prometheus: serving /metrics on {}:{}", settings.prometheus_host,
                 prometheus_->port());
  }
  reader_ = std::make_unique<telemetry::PeriodicReader>(
      *provider_, std::move(exporter),
      telemetry::PeriodicReaderOptions{settings.export_interval, settings.export_timeout});
}

MetricsPipeline::~MetricsPipeline() { shutdown(); }

bool MetricsPipeline::force_flush(std::chrono::milliseconds wait) {
  return reader_ ? reader_->force_flush(wait) : true;
}

std::uint16_t MetricsPipeline::prometheus_port() const noexcept {
  return prometheus_ ? prometheus_->port() : 0;
}

bool MetricsPipeline::shutdown(std::chrono::milliseconds wait) {
  bool ok = true;
  if (reader_) {
    ok = reader_->shutdown(wait);
    // The reader's state (and the exporter in it) lives as long as reader_, even when its thread
    // was abandoned at the bound.
    final_stats_ = stats();
    reader_.reset();
    otlp_ = nullptr;
  }
  if (prometheus_) {
    prometheus_->stop();
    prometheus_.reset();
  }
  return ok;
}

MetricsPipeline::Stats MetricsPipeline::stats() const {
  if (!reader_) return final_stats_;
  Stats s;
  s.reader = reader_->stats();
  if (otlp_) s.otlp = otlp_->stats();
  return s;
}

void check_exporter_settings(const telemetry::TelemetrySettings& settings,
                             const telemetry::GetEnv& getenv) {
  if (settings.exporter != telemetry::ExporterKind::otlp) return;
  if (settings.metrics_active()) resolve_otlp(settings, getenv, Signal::metrics);
  if (settings.traces_active() && !settings.span_group_set.none())
    resolve_otlp(settings, getenv, Signal::traces);
  if (settings.logs_active()) resolve_otlp(settings, getenv, Signal::logs);
}

std::unique_ptr<telemetry::MetricsPipelineBase> make_metrics_pipeline(
    const telemetry::TelemetrySettings& settings, const telemetry::ProcessIdentity& identity,
    const std::string& run_id, const telemetry::GetEnv& getenv) {
  return std::make_unique<MetricsPipeline>(settings, identity, run_id, getenv);
}

std::unique_ptr<telemetry::SpanExporter> make_span_exporter(
    const telemetry::TelemetrySettings& settings, const telemetry::ProcessIdentity& identity,
    const std::string& run_id, const telemetry::GetEnv& getenv) {
  auto resource = telemetry::build_resource(settings, run_id, identity, getenv);
  if (settings.exporter == telemetry::ExporterKind::console)
    return std::make_unique<ConsoleSpanExporter>(resource, settings.console_path);
  return std::make_unique<OtlpSpanExporter>(resolve_otlp(settings, getenv, Signal::traces),
                                            Signal::traces, std::move(resource),
                                            settings.export_interval);
}

std::unique_ptr<telemetry::LogExporter> make_log_exporter(
    const telemetry::TelemetrySettings& settings, const telemetry::ProcessIdentity& identity,
    const std::string& run_id, const telemetry::GetEnv& getenv) {
  return std::make_unique<OtlpLogExporter>(
      resolve_otlp(settings, getenv, Signal::logs), Signal::logs,
      telemetry::build_resource(settings, run_id, identity, getenv), settings.export_interval);
}

telemetry::PipelineFactory metrics_pipelines() {
  return {check_exporter_settings, make_metrics_pipeline, make_span_exporter, make_log_exporter};
}

}  // namespace gym::exporters
