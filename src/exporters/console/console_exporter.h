#pragma once
// The console exporters (docs/reference/telemetry.md#turning-it-on), writing to a ConsoleSink
// (stdout or `telemetry.console_path`): metrics as one compact OTLP/JSON
// ExportMetricsServiceRequest line per export, spans as one JSON object per span per line.
#include <optional>
#include <string>

#include <boost/json/object.hpp>

#include "exporters/console/console_sink.h"
#include "telemetry/metrics/metric_exporter.h"
#include "telemetry/traces/batch_span_processor.h"

namespace gym::exporters {

class ConsoleExporter final : public telemetry::MetricExporter {
 public:
  // Throws std::runtime_error when `path` cannot be opened (ConsoleSink).
  explicit ConsoleExporter(std::optional<std::string> path = std::nullopt);

  telemetry::ExportResult export_metrics(const telemetry::MetricsSnapshot& snapshot,
                                         telemetry::Deadline deadline) noexcept override;
  void shutdown(telemetry::Deadline deadline) noexcept override;

  std::uint64_t failures() const noexcept { return sink_.failures(); }

 private:
  ConsoleSink sink_;
  bool shut_down_ = false;
};

class ConsoleSpanExporter final : public telemetry::SpanExporter {
 public:
  // `resource`: the process's resource attributes, repeated on every line (so that the
  // lines of several processes can be grepped out of one file).
  ConsoleSpanExporter(const telemetry::Resource& resource, std::optional<std::string> path);

  telemetry::ExportResult export_batch(telemetry::SpanBatch spans,
                                       telemetry::Deadline deadline) noexcept override;
  void shutdown(telemetry::Deadline deadline) noexcept override;

 private:
  ConsoleSink sink_;
  boost::json::object resource_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace gym::exporters
