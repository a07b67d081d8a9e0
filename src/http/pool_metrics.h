#pragma once
// The pool metrics of one HTTP client (docs/design/telemetry-contract.md#metrics), recorded through
// the gym_metrics facade: connect_total per acquisition, one queue-duration sample per acquisition
// that waited. Not thread-safe, like the client it observes; the metrics must outlive the client's
// pool.
#include "http/client.h"
#include "telemetry/metrics/gym_metrics.h"

#include <string>
#include <unordered_map>

namespace gym::http {

class PoolMetrics final : public PoolObserver {
 public:
  explicit PoolMetrics(telemetry::GymMetrics& metrics) : metrics_(metrics) {}

  void acquisition_started(const std::string& destination) noexcept override;
  void wait_finished(const std::string& destination, QueueConstraint constraint,
                     QueueOutcome outcome, std::chrono::nanoseconds waited) noexcept override;

 private:
  telemetry::PoolDestination* destination(const std::string& name) noexcept;

  telemetry::GymMetrics& metrics_;
  // Destinations seen by this client: the facade's lock is taken once per name.
  std::unordered_map<std::string, telemetry::PoolDestination*> destinations_;
};

}  // namespace gym::http
