#include "exporters/console/console_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace gym::exporters {

ConsoleSink::ConsoleSink(std::optional<std::string> path) : path_(std::move(path)) {
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

ConsoleSink::~ConsoleSink() {
  if (owns_fd_) ::close(fd_);
}

bool ConsoleSink::write(const std::string& text) noexcept {
  const char* data = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, data, left);  // one call for the whole text in the normal case
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      if (failures_.fetch_add(1, std::memory_order_relaxed) == 0) {
        spdlog::warn("telemetry: the console exporter cannot write to {}: {} (logged once)",
                     path_ ? *path_ : std::string("stdout"), std::strerror(err));
      }
      return false;
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

void ConsoleSink::failed(const char* what) noexcept {
  if (failures_.fetch_add(1, std::memory_order_relaxed) == 0) {
    spdlog::warn("telemetry: the console exporter failed: {} (logged once)", what);
  }
}

}  // namespace gym::exporters
