#pragma once
// Recycled SpanData (issue 14's overhead goal): a span's data was allocated by the thread that
// starts it and freed by the processor's thread after export, so every span paid malloc's
// cross-thread path twice (start + end of a span took 350 ns instead of 130). Exported spans
// come back here instead, and starting a span takes one from a per-thread cache that refills
// from the shared list under one lock per `kRefill` spans; the taker resets it, so a span is
// written only by the threads that record it.
//
// Thread-safety: everything may be called from any thread.
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "telemetry/traces/span_data.h"

namespace gym::telemetry {

class SpanPool {
 public:
  // Spans kept at most (about a megabyte): beyond that exported spans are freed.
  static constexpr std::size_t kCapacity = 2048;
  // Spans a thread takes from the shared list at a time.
  static constexpr std::size_t kRefill = 64;

  // The process's pool.
  static SpanPool& instance();

  // A SpanData in its default state: a recycled one (reset here) when there is one.
  std::unique_ptr<SpanData> take();
  // Keeps the spans of `spans` for take() (up to kCapacity; the rest are freed). Leaves `spans`
  // empty. Never throws.
  void give(std::vector<std::unique_ptr<SpanData>>& spans) noexcept;

  // Spans held in the shared list (tests).
  std::size_t free_count() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<SpanData>> free_;
};

}  // namespace gym::telemetry
