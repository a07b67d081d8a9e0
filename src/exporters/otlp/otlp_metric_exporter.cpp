#include "exporters/otlp/otlp_metric_exporter.h"

#include "exporters/otlp/otlp_encoding.h"

namespace gym::exporters {
using telemetry::ExportResult;

namespace {

std::size_t point_count(const telemetry::MetricsSnapshot& s) {
  std::size_t n = 0;
  for (const auto& m : s.metrics) {
    n += m.type() == telemetry::MetricType::histogram ? m.histogram_points().size()
                                                      : m.number_points().size();
  }
  return n;
}

}  // namespace

OtlpMetricExporter::OtlpMetricExporter(OtlpSettings settings,
                                       std::chrono::milliseconds log_interval)
    : sender_(std::move(settings), Signal::metrics, log_interval) {}

ExportResult OtlpMetricExporter::export_metrics(const telemetry::MetricsSnapshot& snapshot,
                                                telemetry::Deadline deadline) noexcept {
  const std::size_t points = point_count(snapshot);
  std::string payload;
  try {
    payload = encode_request(snapshot, sender_.settings().protocol);
  } catch (const std::exception& e) {
    // Encoding into memory fails only when memory does.
    sender_.dropped(points, e.what());
    return ExportResult::failure;
  }
  return sender_.send(std::move(payload), points, deadline) ? ExportResult::success
                                                            : ExportResult::failure;
}

void OtlpMetricExporter::shutdown(telemetry::Deadline deadline) noexcept {
  sender_.shutdown(deadline);
}

}  // namespace gym::exporters
