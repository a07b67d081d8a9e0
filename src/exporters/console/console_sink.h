#pragma once
// Where console-exporter lines go: stdout, or a file every process of a run appends to
// (`telemetry.console_path`). Each line is written with one write() call on a descriptor opened
// with O_APPEND, so lines of different processes never interleave. The first failure is logged
// once.
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

namespace gym::exporters {

class ConsoleSink {
 public:
  // No path: stdout. A path is opened (created with mode 0644) now; failing to open it throws
  // std::runtime_error naming the path and the reason.
  explicit ConsoleSink(std::optional<std::string> path = std::nullopt);
  ~ConsoleSink();
  ConsoleSink(const ConsoleSink&) = delete;
  ConsoleSink& operator=(const ConsoleSink&) = delete;

  // Writes `text` (one or more whole lines); false, counted and logged once, when it fails.
  bool write(const std::string& text) noexcept;
  // A failure that happened before anything was written (e.g. encoding), counted the same way.
  void failed(const char* what) noexcept;
  std::uint64_t failures() const noexcept { return failures_.load(std::memory_order_relaxed); }

 private:
  std::optional<std::string> path_;
  int fd_ = 1;
  bool owns_fd_ = false;
  std::atomic<std::uint64_t> failures_{0};
};

}  // namespace gym::exporters
