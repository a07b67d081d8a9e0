#include "telemetry/metrics/storage.h"

#include <exception>

#include <spdlog/spdlog.h>

namespace gym::telemetry {

std::uint32_t detail::next_stripe() noexcept {
  static std::atomic<std::uint32_t> threads{0};
  return threads.fetch_add(1, std::memory_order_relaxed) % kStripes;
}

InstrumentStorage::InstrumentStorage(InstrumentDescriptor descriptor, std::uint64_t start_unix_nano,
                                     std::size_t cardinality_limit)
    : descriptor_(std::move(descriptor)),
      start_unix_nano_(start_unix_nano),
      cardinality_limit_(cardinality_limit) {}

void InstrumentStorage::report_dropped(double value, const char* accepts) noexcept {
  if (dropped_.fetch_add(1, std::memory_order_relaxed) == 0) {
    try {
      spdlog::warn(
          "telemetry: instrument '{}' dropped the value {}: it accepts {} (logged once "
          "per instrument)",
          descriptor_.name, value, accepts);
    } catch (...) {
    }
  }
}

void InstrumentStorage::report_overflow() noexcept {
  if (overflow_logged_.exchange(true, std::memory_order_relaxed)) return;
  try {
    spdlog::warn(
        "telemetry: instrument '{}' reached its limit of {} attribute sets; further sets "
        "are recorded as otel.metric.overflow=true (this is a bug: gym-cpp attributes "
        "are bounded)",
        descriptor_.name, cardinality_limit_);
  } catch (...) {
  }
}

bool InstrumentStorage::run_guarded(const std::function<void()>& call) noexcept {
  try {
    call();
    return true;
  } catch (const std::exception& e) {
    if (!callback_error_logged_.exchange(true, std::memory_order_relaxed)) {
      try {
        spdlog::warn("telemetry: the callback of '{}' failed: {} (logged once per instrument)",
                     descriptor_.name, e.what());
      } catch (...) {
      }
    }
  } catch (...) {
    if (!callback_error_logged_.exchange(true, std::memory_order_relaxed)) {
      try {
        spdlog::warn("telemetry: the callback of '{}' failed (logged once per instrument)",
                     descriptor_.name);
      } catch (...) {
      }
    }
  }
  return false;
}

MetricData InstrumentStorage::start_metric(std::uint64_t now_unix_nano) const {
  MetricData m;
  m.descriptor = descriptor_;
  m.start_time_unix_nano =
      metric_type(descriptor_.kind) == MetricType::gauge ? 0 : start_unix_nano_;
  m.time_unix_nano = now_unix_nano;
  return m;
}

}  // namespace gym::telemetry
