#include "telemetry/metrics/periodic_reader.h"

#include "telemetry/common/shutdown_report.h"

#include <pthread.h>

#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace gym::telemetry {

using Clock = std::chrono::steady_clock;

// Shared by the reader and its thread, so that a thread abandoned at shutdown (an export that
// outlived the bound) still finds its exporter and state alive.
struct PeriodicReader::State {
  const MeterProvider* provider = nullptr;
  std::unique_ptr<MetricExporter> exporter;
  PeriodicReaderOptions options;

  std::mutex mutex;
  std::condition_variable changed;
  bool stop = false;            // shutdown requested: one last export, then exit
  bool abandoned = false;       // shutdown gave up waiting: never touch the provider again
  bool collecting = false;      // the thread is inside provider->collect()
  bool exporting = false;       // the thread holds a collected snapshot or is exporting it
  bool finished = false;        // the thread is done (exporter shut down)
  std::uint64_t requested = 0;  // flush requests so far
  std::uint64_t completed = 0;  // requests covered by a finished export
  Deadline request_deadline{};  // bound of the export a request asked for
  // request_deadline less the wrap-up slice (wrap_up()): the exporter's deadline.
  Deadline request_export_deadline{};
  bool last_ok = true;
  Stats stats;
};

namespace {

// The slice of a flush or shutdown bound kept back from the exporter: the exporter's deadline is
// the bound less this, so that an export the collector never answers is given up, counted and
// logged by the exporter, and the exporter shut down, while the caller still waits (5 % of the
// bound: 250 ms of the 5 s shutdown bound).
std::chrono::milliseconds wrap_up(std::chrono::milliseconds wait) { return wait / 20; }

void run(const std::shared_ptr<PeriodicReader::State>& s) {
  pthread_setname_np(pthread_self(), "gym-otel-metric");
  auto next = Clock::now() + s->options.interval;
  std::unique_lock lock(s->mutex);
  while (true) {
    s->changed.wait_until(lock, next, [&] { return s->stop || s->requested > s->completed; });
    if (s->abandoned) break;
    const bool stopping = s->stop;
    const std::uint64_t generation = s->requested;
    Deadline deadline = Clock::now() + s->options.timeout;
    const Deadline bound = s->request_deadline;
    if (stopping || generation > s->completed) {
      deadline = std::min(deadline, s->request_export_deadline);
    }

    s->collecting = true;
    lock.unlock();
    MetricsSnapshot snapshot;
    bool collected = true;
    try {
      snapshot = s->provider->collect();
    } catch (const std::exception& e) {
      collected = false;
      spdlog::warn("telemetry: metric collection failed: {}", e.what());
    }
    const bool to_export = collected && !snapshot.metrics.empty();
    lock.lock();
    s->collecting = false;
    s->exporting = to_export;
    s->changed.notify_all();
    lock.unlock();

    bool ok = collected;
    if (to_export) {
      ok = s->exporter->export_metrics(snapshot, deadline) == ExportResult::success;
      lock.lock();
      s->exporting = false;
      if (!s->abandoned) {  // an abandoned export was counted as failed by shutdown()
        ++s->stats.exports;
        if (!ok) ++s->stats.failures;
      }
      lock.unlock();
    }
    if (stopping) s->exporter->shutdown(bound);

    lock.lock();
    s->last_ok = ok;
    s->completed = generation;
    if (stopping) {
      s->finished = true;
      s->changed.notify_all();
      return;
    }
    s->changed.notify_all();
    next = Clock::now() + s->options.interval;
  }
  s->finished = true;
  s->changed.notify_all();
}

}  // namespace

PeriodicReader::PeriodicReader(const MeterProvider& provider,
                               std::unique_ptr<MetricExporter> exporter,
                               PeriodicReaderOptions options)
    : state_(std::make_shared<State>()) {
  if (options.interval.count() <= 0 || options.timeout.count() <= 0) {
    throw std::invalid_argument("telemetry: the export interval and timeout must be positive");
  }
  if (options.timeout > options.interval) {
    throw std::invalid_argument(
        fmt::format("telemetry: the export timeout ({} ms) must not exceed "
                    "the export interval ({} ms)",
                    options.timeout.count(), options.interval.count()));
  }
  if (!exporter) throw std::invalid_argument("telemetry: a periodic reader needs an exporter");
  state_->provider = &provider;
  state_->exporter = std::move(exporter);
  state_->options = options;
  thread_ = std::thread(run, state_);
}

PeriodicReader::~PeriodicReader() {
  if (!shut_down_) shutdown(kShutdownBound);
}

bool PeriodicReader::force_flush(std::chrono::milliseconds wait) {
  State& s = *state_;
  std::unique_lock lock(s.mutex);
  if (s.stop || s.finished) return false;
  const Deadline deadline = Clock::now() + wait;
  s.request_deadline = deadline;
  s.request_export_deadline = deadline - wrap_up(wait);
  const std::uint64_t generation = ++s.requested;
  s.changed.notify_all();
  if (!s.changed.wait_until(lock, deadline, [&] { return s.completed >= generation; })) {
    shutdown_report::warn_or_hold(
        fmt::format("telemetry: metrics flush did not finish within {} ms", wait.count()));
    return false;
  }
  return s.last_ok;
}

bool PeriodicReader::shutdown(std::chrono::milliseconds wait) {
  if (shut_down_) return false;
  shut_down_ = true;
  State& s = *state_;
  std::unique_lock lock(s.mutex);
  const Deadline deadline = Clock::now() + wait;
  s.stop = true;
  s.request_deadline = deadline;
  s.request_export_deadline = deadline - wrap_up(wait);
  s.changed.notify_all();
  if (s.changed.wait_until(lock, deadline, [&] { return s.finished; })) {
    const bool ok = s.last_ok;
    lock.unlock();
    thread_.join();
    return ok;
  }
  // The export outlived the bound: leave it to finish in the background, but never return while
  // the thread reads the provider (collection itself does no I/O and ends promptly).
  s.abandoned = true;
  s.changed.wait(lock, [&] { return !s.collecting; });
  if (s.exporting) {  // its data is dropped: count it here, the thread will not
    ++s.stats.exports;
    ++s.stats.failures;
  }
  lock.unlock();
  thread_.detach();
  shutdown_report::warn_or_hold(fmt::format(
      "telemetry: the final metrics export did not finish within {} ms; its data is dropped",
      wait.count()));
  return false;
}

PeriodicReader::Stats PeriodicReader::stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->stats;
}

}  // namespace gym::telemetry
