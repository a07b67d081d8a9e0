#pragma once
// The bodies of BatchProcessor's members (batch_processor.h). Only the file of each signal that
// instantiates it includes this (traces/batch_span_processor.cpp, logs/log_bridge.cpp), so the
// common code names no signal.
#include <fmt/format.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <vector>

#include "telemetry/common/batch_processor.h"
#include "telemetry/common/short_lock.h"
#include "telemetry/common/shutdown_bound.h"
#include "telemetry/common/shutdown_report.h"

namespace gym::telemetry {

template <class Record>
BatchProcessor<Record>::BatchProcessor(std::unique_ptr<BatchExporter<Record>> exporter,
                                       BatchSettings settings, std::string what,
                                       std::string queue_variable,
                                       std::chrono::milliseconds log_interval)
    : exporter_(std::move(exporter)),
      settings_(settings),
      what_(std::move(what)),
      queue_variable_(std::move(queue_variable)),
      log_interval_(log_interval) {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "gym-batches");
    run();
  });
}

template <class Record>
BatchProcessor<Record>::~BatchProcessor() {
  shutdown(kShutdownBound);
}

template <class Record>
void BatchProcessor<Record>::push(Record&& record) noexcept {
  bool wake = false;
  std::uint64_t log_drops = 0;
  {
    const auto lock = short_lock(mutex_);
    if (stopping_) {
      ++stats_.dropped_closed;
      return;
    }
    if (queue_.size() >= settings_.max_queue_size) {
      ++stats_.dropped_full;
      ++unlogged_drops_;
      const auto now = Clock::now();
      if (last_drop_log_ == Clock::time_point{} || now - last_drop_log_ >= log_interval_) {
        last_drop_log_ = now;
        log_drops = std::exchange(unlogged_drops_, 0);
      }
    } else {
      try {
        queue_.push_back(std::move(record));
      } catch (...) {
        ++stats_.dropped_full;  // out of memory: a dropped record, never a failed request
      }
      wake = queue_.size() == settings_.max_export_batch_size;
    }
  }
  if (log_drops) warn_dropped(log_drops, "is");
  if (wake) wake_.notify_one();
}

template <class Record>
void BatchProcessor<Record>::warn_dropped(std::uint64_t n, const char* is_or_was) const {
  shutdown_report::warn_or_hold(
      fmt::format("telemetry: the {} queue {} full ({}={}); dropped {} {}(s)", what_, is_or_was,
                  queue_variable_, settings_.max_queue_size, n, what_));
}

template <class Record>
void BatchProcessor<Record>::run() {
  std::unique_lock lock(mutex_);
  auto next = Clock::now() + settings_.schedule_delay;
  std::uint64_t flushes_seen = 0;
  for (;;) {
    wake_.wait_until(lock, next, [&] {
      return stopping_ || flush_requests_ != flushes_seen ||
             queue_.size() >= settings_.max_export_batch_size;
    });
    const bool drain = stopping_ || flush_requests_ != flushes_seen;
    flushes_seen = flush_requests_;
    if (Clock::now() >= next || drain || queue_.size() >= settings_.max_export_batch_size) {
      do {
        export_batch(lock);
      } while (drain ? !queue_.empty() : queue_.size() >= settings_.max_export_batch_size);
      next = Clock::now() + settings_.schedule_delay;
    }
    idle_.notify_all();
    if (stopping_ && queue_.empty()) break;
  }
}

template <class Record>
void BatchProcessor<Record>::export_batch(std::unique_lock<std::mutex>& lock) {
  if (queue_.empty()) return;
  const std::size_t n = std::min(queue_.size(), settings_.max_export_batch_size);
  std::vector<Record> batch = std::move(spare_);  // empty: stored cleared below
  if (n == queue_.size()) {
    batch.swap(queue_);  // the whole queue is the batch: no record moves
  } else {               // a backlog of more than one batch: the oldest n go
    const auto first = std::make_move_iterator(queue_.begin());
    batch.assign(first, first + static_cast<std::ptrdiff_t>(n));
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
  }
  in_flight_ = n;
  auto deadline = Clock::now() + settings_.export_timeout;
  if (stopping_) deadline = std::min(deadline, stop_deadline_);
  lock.unlock();
  const auto result = exporter_->export_batch(batch, deadline);
  BatchRelease<Record>::release(batch);  // outside the lock
  lock.lock();
  spare_ = std::move(batch);
  in_flight_ = 0;
  (result == ExportResult::success ? stats_.exported : stats_.export_failed) += n;
}

template <class Record>
bool BatchProcessor<Record>::force_flush(std::chrono::milliseconds wait) noexcept {
  std::unique_lock lock(mutex_);
  if (stopped_) return queue_.empty();
  ++flush_requests_;
  wake_.notify_one();
  return idle_.wait_for(lock, wait, [&] { return queue_.empty() && in_flight_ == 0; });
}

template <class Record>
bool BatchProcessor<Record>::shutdown(std::chrono::milliseconds wait) noexcept {
  const auto deadline = Clock::now() + wait;
  bool drained = false;
  std::uint64_t unlogged_drops = 0;
  {
    std::unique_lock lock(mutex_);
    if (stopped_) return queue_.empty();
    stopping_ = true;
    // Drops since the last summary would otherwise never be told (it waits for another drop).
    unlogged_drops = std::exchange(unlogged_drops_, 0);
    stop_deadline_ = deadline;
    wake_.notify_one();
    drained = idle_.wait_until(lock, deadline, [&] { return queue_.empty() && in_flight_ == 0; });
    if (!drained) {
      // The exporter is stuck past the bound: what is still queued is dropped, and logged.
      const std::size_t left = queue_.size();
      stats_.export_failed += left;
      queue_.clear();
      if (left)
        shutdown_report::warn_or_hold(
            fmt::format("telemetry: {} {}(s) not exported within the shutdown bound", left, what_));
    }
    stopped_ = true;
  }
  if (unlogged_drops) warn_dropped(unlogged_drops, "was");
  exporter_->shutdown(deadline);  // a stuck export returns now
  if (thread_.joinable()) thread_.join();
  return drained;
}

template <class Record>
typename BatchProcessor<Record>::Stats BatchProcessor<Record>::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace gym::telemetry
