#pragma once
// The OTLP metrics exporter (docs/design/telemetry-contract.md#export-and-failure-isolation): a
// telemetry::MetricExporter over an OtlpSender (otlp_sender.h) for Signal::metrics.
// export_metrics() encodes the snapshot as an ExportMetricsServiceRequest on the calling thread
// (protobuf for grpc and http/protobuf, OTLP/JSON for http/json) and hands it to the sender, which
// sends it on its own thread over gRPC or HTTP, retries (retry.h), compresses per the settings, and
// counts and logs (rate-limited) what it drops; the call waits at most until its deadline and never
// throws.
//
// Thread-safety: as MetricExporter (one caller at a time).
#include <chrono>

#include "exporters/otlp/otlp_sender.h"
#include "exporters/otlp/otlp_settings.h"
#include "telemetry/metrics/metric_exporter.h"

namespace gym::exporters {

class OtlpMetricExporter final : public telemetry::MetricExporter {
 public:
  // `log_interval`: at most one failure summary per this period (the export interval).
  explicit OtlpMetricExporter(OtlpSettings settings,
                              std::chrono::milliseconds log_interval = std::chrono::seconds(10));

  telemetry::ExportResult export_metrics(const telemetry::MetricsSnapshot& snapshot,
                                         telemetry::Deadline deadline) noexcept override;
  void shutdown(telemetry::Deadline deadline) noexcept override;

  // items_* count data points.
  using Stats = OtlpSender::Stats;
  Stats stats() const { return sender_.stats(); }
  const OtlpSettings& settings() const noexcept { return sender_.settings(); }

 private:
  OtlpSender sender_;
};

}  // namespace gym::exporters
