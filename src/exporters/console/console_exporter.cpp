#include "exporters/console/console_exporter.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "exporters/otlp/otlp_json.h"

namespace gym::exporters {

using telemetry::Deadline;
using telemetry::ExportResult;
using telemetry::MetricsSnapshot;

ConsoleExporter::ConsoleExporter(std::optional<std::string> path) : path_(std::move(path)) {
  if (!path_) return;
  fd_ = ::open(path_->c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw std::runtime_error(
        fmt::format("telemetry: cannot open the console exporter file '{}' "
                    "(telemetry.console_path): {}",
                    *path_, std::strerror(errno)));
  }
  owns_fd_ = true;
}

ConsoleExporter::~ConsoleExporter() {
  if (owns_fd_) ::close(fd_);
}

bool ConsoleExporter::write_line(const std::string& line) noexcept {
  const char* data = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, data, left);  // one call for the whole line in the normal case
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

ExportResult ConsoleExporter::export_metrics(const MetricsSnapshot& snapshot,
                                             Deadline /*deadline*/) noexcept {
  if (shut_down_) return ExportResult::failure;
  try {
    std::string line = otlp_json_text(snapshot);
    line += '\n';
    if (write_line(line)) return ExportResult::success;
    int err = errno;
    if (failures_.fetch_add(1, std::memory_order_relaxed) == 0) {
      spdlog::warn("telemetry: the console exporter cannot write to {}: {} (logged once)",
                   path_ ? *path_ : std::string("stdout"), std::strerror(err));
    }
  } catch (const std::exception& e) {
    if (failures_.fetch_add(1, std::memory_order_relaxed) == 0) {
      spdlog::warn("telemetry: the console exporter failed: {} (logged once)", e.what());
    }
  }
  return ExportResult::failure;
}

void ConsoleExporter::shutdown(Deadline /*deadline*/) noexcept { shut_down_ = true; }

}  // namespace gym::exporters
