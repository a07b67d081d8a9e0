#pragma once
// The periodic reader (docs/design/telemetry-contract.md#shutdown-flush): a thread that collects
// the provider every interval and hands the snapshot to its exporter. It owns the exporter.
// force_flush() and shutdown() run one more collect-and-export on the reader thread and wait for it
// at most the given time (5 s at shutdown). The exporter's deadline is that time less a 5 % wrap-up
// slice, so an exporter that honours its deadline gives up, counts and logs the drop and shuts down
// within the bound. An export still running at the bound (an exporter that ignores its deadline) is
// abandoned: the thread finishes it in the background and the process may exit; it is counted as a
// failed export.
//
// Threading: every public member may be called from any thread. The provider must outlive the
// reader.
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "telemetry/common/shutdown_bound.h"
#include "telemetry/metrics/meter_provider.h"
#include "telemetry/metrics/metric_exporter.h"

namespace gym::telemetry {

struct PeriodicReaderOptions {
  std::chrono::milliseconds interval{10'000};  // OTEL_METRIC_EXPORT_INTERVAL; > 0
  std::chrono::milliseconds timeout{10'000};   // OTEL_METRIC_EXPORT_TIMEOUT; > 0, <= interval
};

class PeriodicReader {
 public:
  // Starts the reader thread; the first export happens one interval from now. Throws
  // std::invalid_argument for a non-positive interval or timeout, or a timeout above the
  // interval.
  PeriodicReader(const MeterProvider& provider, std::unique_ptr<MetricExporter> exporter,
                 PeriodicReaderOptions options = {});
  // shutdown(kShutdownBound) unless already shut down.
  ~PeriodicReader();
  PeriodicReader(const PeriodicReader&) = delete;
  PeriodicReader& operator=(const PeriodicReader&) = delete;

  // Collects and exports now; true when that export succeeded within `wait`.
  bool force_flush(std::chrono::milliseconds wait = kShutdownBound);

  // Final collect and export, then the exporter's shutdown, then the thread stops; all within
  // `wait`. True when everything finished in time and the export succeeded. Idempotent.
  bool shutdown(std::chrono::milliseconds wait = kShutdownBound);

  struct Stats {
    std::uint64_t exports = 0;   // finished or abandoned exports
    std::uint64_t failures = 0;  // of which failed or abandoned
  };
  Stats stats() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
  std::thread thread_;
  bool shut_down_ = false;
};

}  // namespace gym::telemetry
