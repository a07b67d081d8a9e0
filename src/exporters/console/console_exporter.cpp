#include "exporters/console/console_exporter.h"

#include <boost/json.hpp>

#include "exporters/otlp/otlp_json.h"
#include "exporters/otlp/otlp_span_log_json.h"

namespace gym::exporters {

using telemetry::Deadline;
using telemetry::ExportResult;

ConsoleExporter::ConsoleExporter(std::optional<std::string> path) : sink_(std::move(path)) {}

ExportResult ConsoleExporter::export_metrics(const telemetry::MetricsSnapshot& snapshot,
                                             Deadline /*deadline*/) noexcept {
  if (shut_down_) return ExportResult::failure;
  try {
    std::string line = otlp_json_text(snapshot);
    line += '\n';
    return sink_.write(line) ? ExportResult::success : ExportResult::failure;
  } catch (const std::exception& e) {
    sink_.failed(e.what());
  }
  return ExportResult::failure;
}

void ConsoleExporter::shutdown(Deadline /*deadline*/) noexcept { shut_down_ = true; }

ConsoleSpanExporter::ConsoleSpanExporter(const telemetry::Resource& resource,
                                         std::optional<std::string> path)
    : sink_(std::move(path)),
      resource_(plain_attributes(std::span<const telemetry::Attribute>(
          resource.attributes.begin(), resource.attributes.end()))) {}

ExportResult ConsoleSpanExporter::export_batch(telemetry::SpanBatch spans,
                                               Deadline /*deadline*/) noexcept {
  if (shut_down_) return ExportResult::failure;
  try {
    // One write per span: a line never mixes with another process's lines in a shared file.
    bool ok = true;
    for (const auto& s : spans) {
      std::string line = boost::json::serialize(console_span(*s, resource_));
      line += '\n';
      ok = sink_.write(line) && ok;
    }
    return ok ? ExportResult::success : ExportResult::failure;
  } catch (const std::exception& e) {
    sink_.failed(e.what());
  }
  return ExportResult::failure;
}

void ConsoleSpanExporter::shutdown(Deadline /*deadline*/) noexcept { shut_down_ = true; }

}  // namespace gym::exporters
