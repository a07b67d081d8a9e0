#pragma once
// The batch processor (docs/design/telemetry-contract.md#export-and-failure-isolation), for spans
// and log records alike: finished records wait in a bounded queue and a thread of its own exports
// them in batches, every schedule delay or as soon as a batch is full. A record arriving at a full
// queue is dropped and counted, never waited for; drops are logged at most once per interval.
// Shutdown exports what is queued within its bound (5 s for the whole process).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "telemetry/common/batch_settings.h"
#include "telemetry/common/export_result.h"

namespace gym::telemetry {

using Clock = std::chrono::steady_clock;

// Where batches go. Called from the processor's thread, one call at a time; never throws.
template <class Record>
class BatchExporter {
 public:
  BatchExporter() = default;
  virtual ~BatchExporter() = default;
  BatchExporter(const BatchExporter&) = delete;
  BatchExporter& operator=(const BatchExporter&) = delete;

  virtual ExportResult export_batch(std::span<const Record> records,
                                    Deadline deadline) noexcept = 0;
  // Called from another thread while an export may be running: that export must return soon
  // (the shutdown bound, 5 s), and later ones fail at once.
  virtual void shutdown(Deadline /*deadline*/) noexcept {}
};

// What becomes of an exported batch's records: freed. A signal may recycle them instead by
// specialising this where it instantiates its processor (spans go back to their pool).
template <class Record>
struct BatchRelease {
  static void release(std::vector<Record>& batch) noexcept { batch.clear(); }
};

// Its members are defined in batch_processor_impl.h; each signal instantiates its own.
template <class Record>
class BatchProcessor {
 public:
  // `what`: "span" or "log record", and `queue_variable` the setting that bounds the queue, for
  // the drop warning; `log_interval`: at most one drop summary per this period.
  BatchProcessor(std::unique_ptr<BatchExporter<Record>> exporter, BatchSettings settings,
                 std::string what, std::string queue_variable,
                 std::chrono::milliseconds log_interval = std::chrono::seconds(10));
  ~BatchProcessor();  // shutdown()
  BatchProcessor(const BatchProcessor&) = delete;
  BatchProcessor& operator=(const BatchProcessor&) = delete;

  void push(Record&& record) noexcept;
  // Exports what is queued; true when nothing is left by `wait`.
  bool force_flush(std::chrono::milliseconds wait) noexcept;
  // force_flush, then stop; later records are dropped. True when everything went out.
  bool shutdown(std::chrono::milliseconds wait) noexcept;

  struct Stats {
    std::uint64_t exported = 0;        // records in batches the exporter accepted
    std::uint64_t export_failed = 0;   // records in batches the exporter gave up on
    std::uint64_t dropped_full = 0;    // records that met a full queue
    std::uint64_t dropped_closed = 0;  // records that came after shutdown
  };
  Stats stats() const;

 private:
  void run();
  // The drop summary: "the span queue is full (...); dropped n span(s)" ("was" at shutdown).
  void warn_dropped(std::uint64_t n, const char* is_or_was) const;
  // Exports up to one batch; called with the lock held, returns with it held.
  void export_batch(std::unique_lock<std::mutex>& lock);

  std::unique_ptr<BatchExporter<Record>> exporter_;
  const BatchSettings settings_;
  const std::string what_, queue_variable_;
  const std::chrono::milliseconds log_interval_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;  // the thread: a full batch, a flush, shutdown
  std::condition_variable idle_;  // flushers: the queue drained
  // A vector, not a deque: the thread swaps it for `spare_` (the last batch's buffer, emptied) to
  // take a batch, so records are never moved one by one and pushes do not allocate once both
  // buffers have grown.
  std::vector<Record> queue_;
  std::vector<Record> spare_;
  std::size_t in_flight_ = 0;  // records taken by the thread, not yet exported
  std::uint64_t flush_requests_ = 0;
  bool stopping_ = false;
  Clock::time_point stop_deadline_{};  // set with stopping_: no export runs past it
  bool stopped_ = false;
  Stats stats_;
  std::uint64_t unlogged_drops_ = 0;
  Clock::time_point last_drop_log_{};
  std::thread thread_;
};

}  // namespace gym::telemetry
