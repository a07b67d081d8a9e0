#pragma once
// A push exporter: what the periodic reader hands each snapshot to.
//
// Thread-safety: the reader calls export_metrics, force_flush and shutdown from its own thread,
// one call at a time, never concurrently. An exporter never throws and returns by `deadline`
// whenever the operating system lets it (a blocked stdout pipe is the exception the reader's
// bounded shutdown covers).
#include "telemetry/common/export_result.h"
#include "telemetry/metrics/metric_data.h"

namespace gym::telemetry {

class MetricExporter {
 public:
  MetricExporter() = default;
  virtual ~MetricExporter() = default;
  MetricExporter(const MetricExporter&) = delete;
  MetricExporter& operator=(const MetricExporter&) = delete;
  MetricExporter(MetricExporter&&) = delete;
  MetricExporter& operator=(MetricExporter&&) = delete;

  // Sends one snapshot. Failures are the exporter's to log (rate-limited) and count.
  virtual ExportResult export_metrics(const MetricsSnapshot& snapshot,
                                      Deadline deadline) noexcept = 0;
  // Sends whatever the exporter still holds. True when nothing is left.
  virtual bool force_flush(Deadline /*deadline*/) noexcept { return true; }
  // Flushes and releases resources; later exports fail.
  virtual void shutdown(Deadline /*deadline*/) noexcept {}
};

}  // namespace gym::telemetry
