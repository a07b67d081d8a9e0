#include "telemetry/traces/span_pool.h"

#include "telemetry/common/short_lock.h"

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
  if (cache.empty()) return std::make_unique_for_overwrite<SpanData>();  // as above
  auto span = std::move(cache.back());
  cache.pop_back();
  // Reset by destroying and default-constructing in place: a field added to SpanData is reset
  // without anyone remembering to. Default- rather than value-initialised (no `()`): every member
  // has its initialiser, and value-initialisation would first zero all ~600 bytes, the inline
  // attribute storage included (a third of what take() cost).
  std::destroy_at(span.get());
  ::new (static_cast<void*>(span.get())) SpanData;
  return span;
}

void SpanPool::give(std::vector<std::unique_ptr<SpanData>>& spans) noexcept {
  // Not reset here: take() resets a span on the thread that fills it, so its attribute strings
  // are freed by the thread that allocated them (malloc's fast path) and this thread, the
  // processor's, never writes to a span again.
  {
    std::lock_guard lock(mutex_);
    if (free_.empty() && spans.size() <= kCapacity) {
      free_.swap(spans);  // the usual case (takers keep the list short): no copy under the lock
    } else {
      const std::size_t keep =
          std::min(spans.size(), kCapacity - std::min(kCapacity, free_.size()));
      try {
        free_.insert(free_.end(), std::make_move_iterator(spans.begin()),
                     std::make_move_iterator(spans.begin() + static_cast<std::ptrdiff_t>(keep)));
      } catch (...) {  // out of memory for the list: the spans are freed below
      }
    }
  }
  spans.clear();  // what was not kept
}

std::size_t SpanPool::free_count() const {
  std::lock_guard lock(mutex_);
  return free_.size();
}

}  // namespace gym::telemetry
