#include "http/pool_metrics.h"

namespace gym::http {

telemetry::PoolDestination* PoolMetrics::destination(const std::string& name) noexcept {
  if (auto it = destinations_.find(name); it != destinations_.end()) return it->second;
  try {
    return destinations_.emplace(name, metrics_.pool_destination(name)).first->second;
  } catch (...) {  // out of memory: lose the sample, never the request
    return nullptr;
  }
}

void PoolMetrics::acquisition_started(const std::string& name) noexcept {
  if (auto* d = destination(name)) d->acquisition_started();
}

void PoolMetrics::wait_finished(const std::string& name, QueueConstraint constraint,
                                QueueOutcome outcome, std::chrono::nanoseconds waited) noexcept {
  auto* d = destination(name);
  if (!d) return;
  d->wait_finished(constraint, outcome, std::chrono::duration<double, std::milli>(waited).count());
}

}  // namespace gym::http
