#pragma once
// The batch span processor of telemetry.md 7.3: finished spans wait in a bounded queue
// (OTEL_BSP_MAX_QUEUE_SIZE) and a thread of its own exports them in batches of
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE every OTEL_BSP_SCHEDULE_DELAY ms, or as soon as a batch is full.
// A span arriving at a full queue is dropped and counted, never waited for (D9); drops are logged
// at most once per interval. Shutdown (D5) exports what is queued within its bound.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <thread>

#include "telemetry/export/exporter.h"
#include "telemetry/export/periodic_reader.h"
#include "telemetry/traces/sampler.h"
#include "telemetry/traces/tracer.h"

namespace gym::telemetry {

using Clock = std::chrono::steady_clock;

// Where batches go: OTLP (any protocol) or the console. Called from the processor's thread
// only, one call at a time; never throws.
class SpanExporter {
 public:
  SpanExporter() = default;
  virtual ~SpanExporter() = default;
  SpanExporter(const SpanExporter&) = delete;
  SpanExporter& operator=(const SpanExporter&) = delete;

  virtual ExportResult export_spans(std::span<const SpanData> spans,
                                    Deadline deadline) noexcept = 0;
  // Called from another thread while an export may be running: that export must return soon
  // (the D5 bound), and later ones fail at once.
  virtual void shutdown(Deadline /*deadline*/) noexcept {}
};

class BatchSpanProcessor final : public SpanProcessor {
 public:
  // `log_interval`: at most one drop summary per this period.
  BatchSpanProcessor(std::unique_ptr<SpanExporter> exporter, BatchSpanSettings settings,
                     std::chrono::milliseconds log_interval = std::chrono::seconds(10));
  ~BatchSpanProcessor() override;  // shutdown()

  void on_end(SpanData&& span) noexcept override;
  bool force_flush(std::chrono::milliseconds wait) noexcept override;
  bool shutdown(std::chrono::milliseconds wait) noexcept override;

  struct Stats {
    std::uint64_t exported = 0;        // spans in batches the exporter accepted
    std::uint64_t export_failed = 0;   // spans in batches the exporter gave up on
    std::uint64_t dropped_full = 0;    // spans that met a full queue
    std::uint64_t dropped_closed = 0;  // spans that ended after shutdown
  };
  Stats stats() const;

 private:
  void run();
  // Exports up to one batch; called with the lock held, returns with it held.
  void export_batch(std::unique_lock<std::mutex>& lock);

  std::unique_ptr<SpanExporter> exporter_;
  const BatchSpanSettings settings_;
  const std::chrono::milliseconds log_interval_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;  // the thread: a full batch, a flush, shutdown
  std::condition_variable idle_;  // flushers: the queue drained
  std::deque<SpanData> queue_;
  std::size_t in_flight_ = 0;  // spans taken by the thread, not yet exported
  std::uint64_t flush_requests_ = 0;
  bool stopping_ = false;
  Clock::time_point stop_deadline_{};  // set with stopping_: no export runs past it
  bool stopped_ = false;
  Stats stats_;
  std::uint64_t unlogged_drops_ = 0;
  std::chrono::steady_clock::time_point last_drop_log_{};
  std::thread thread_;
};

}  // namespace gym::telemetry
