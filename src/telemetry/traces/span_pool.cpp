#include "telemetry/traces/span_pool.h"

#include <algorithm>
#include <iterator>
#include <memory>

namespace gym::telemetry {

SpanPool& SpanPool::instance() {
  // Never destroyed: a processor may still export (and give) while statics are torn down.
  static auto* pool = new SpanPool;
  return *pool;
}

std::unique_ptr<SpanData> SpanPool::take() {
  thread_local std::vector<std::unique_ptr<SpanData>> cache;
  if (cache.empty()) {
    std::lock_guard lock(mutex_);
    const std::size_t n = std::min(kRefill, free_.size());
    const auto first = free_.end() - static_cast<std::ptrdiff_t>(n);
    cache.insert(cache.end(), std::make_move_iterator(first), std::make_move_iterator(free_.end()));
    free_.erase(first, free_.end());
  }
  if (cache.empty()) return std::make_unique<SpanData>();
  auto span = std::move(cache.back());
  cache.pop_back();
  return span;
}

void SpanPool::give(std::vector<std::unique_ptr<SpanData>>& spans) noexcept {
  // Reset outside the lock, by destroying and default-constructing each in place: a span's
  // attribute strings are freed here, on the caller's thread, and a new field of SpanData is
  // reset without anyone remembering to.
  for (auto& s : spans) {
    std::destroy_at(s.get());
    std::construct_at(s.get());
  }
  {
    std::lock_guard lock(mutex_);
    const std::size_t keep = std::min(spans.size(), kCapacity - std::min(kCapacity, free_.size()));
    try {
      free_.insert(free_.end(), std::make_move_iterator(spans.begin()),
                   std::make_move_iterator(spans.begin() + static_cast<std::ptrdiff_t>(keep)));
    } catch (...) {  // out of memory for the list: the spans are freed below
    }
  }
  spans.clear();
}

std::size_t SpanPool::free_count() const {
  std::lock_guard lock(mutex_);
  return free_.size();
}

}  // namespace gym::telemetry
