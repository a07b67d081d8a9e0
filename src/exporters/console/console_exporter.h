#pragma once
// The console exporter (telemetry.md 7.1, 7.4): one compact OTLP/JSON ExportMetricsServiceRequest
// per export, as one line on stdout, or appended to a file (`telemetry.console_path`) that every
// process of a run shares. Each line is written with one write() call on a descriptor opened
// with O_APPEND, so lines of different processes never interleave.
#include <atomic>
#include <optional>
#include <string>

#include "telemetry/export/exporter.h"

namespace gym::exporters {

class ConsoleExporter final : public telemetry::MetricExporter {
 public:
  // No path: stdout. A path is opened (created with mode 0644) now; failing to open it throws
  // std::runtime_error naming the path and the reason.
  explicit ConsoleExporter(std::optional<std::string> path = std::nullopt);
  ~ConsoleExporter() override;

  telemetry::ExportResult export_metrics(const telemetry::MetricsSnapshot& snapshot,
                                         telemetry::Deadline deadline) noexcept override;
  void shutdown(telemetry::Deadline deadline) noexcept override;

  std::uint64_t failures() const noexcept { return failures_.load(std::memory_order_relaxed); }

 private:
  bool write_line(const std::string& line) noexcept;

  std::optional<std::string> path_;
  int fd_ = 1;
  bool owns_fd_ = false;
  bool shut_down_ = false;
  std::atomic<std::uint64_t> failures_{0};
};

}  // namespace gym::exporters
