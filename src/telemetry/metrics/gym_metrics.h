#pragma once
// The gym_metrics facade (docs/design/telemetry-contract.md#metrics): the one place that names
// every instrument gym-cpp emits, with its unit, buckets and attribute keys. A process creates the
// instruments of its role (a role that does not record a metric never creates it); call sites hold
// this object and call typed recorders, never a metric name or an attribute key.
//
// Threading: every recorder may be called from any thread; recording is a few
// relaxed atomic operations and never blocks (pool destinations take a lock
// once, when first seen). With a disabled provider every recorder returns after
// one branch. The provider must outlive it.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "telemetry/metrics/instruments.h"
#include "telemetry/metrics/meter_provider.h"
#include "telemetry/metrics/pool_wait.h"

namespace gym::telemetry {

struct MemorySample;  // memory_sampler.h

// ---- Every exported name and point attribute key (the telemetry contract) ----
// Recorders never need them (the facade spells them); code that reads exports does (the
// report). Units and buckets live beside the instruments in gym_metrics.cpp.
namespace metric_names {
inline constexpr std::string_view kRolloutDuration = "gym.rollout.duration_ms";
inline constexpr std::string_view kVerifyDuration = "gym.verify.duration_ms";
inline constexpr std::string_view kVerifySuccessRate = "gym.verify.success_rate";
inline constexpr std::string_view kServersActive = "gym.servers.active";
inline constexpr std::string_view kPoolQueueDuration = "gym.http.connection_pool.queue_duration_ms";
inline constexpr std::string_view kPoolConnectTotal = "gym.http.connection_pool.connect_total";
inline constexpr std::string_view kServerMemoryUsage = "gym.server.memory.usage";
inline constexpr std::string_view kServerMemoryPeak = "gym.server.memory.sampled_peak";
inline constexpr std::string_view kServerProcesses = "gym.server.processes";
inline constexpr std::string_view kHostMemoryUsage = "gym.host.memory.usage";
inline constexpr std::string_view kHostMemoryAvailable = "gym.host.memory.available";
inline constexpr std::string_view kHostMemoryTotal = "gym.host.memory.total";
inline constexpr std::string_view kHostMemoryPeak = "gym.host.memory.sampled_peak";
inline constexpr std::string_view kHttpRequestDuration = "http.server.request.duration";
inline constexpr std::string_view kHttpActiveRequests = "http.server.active_requests";
// gym-cpp's own, beyond NeMo Gym's set: vllm_model's on-policy check
// (docs/reference/model-servers.md).
inline constexpr std::string_view kTokenContiguityBreaks = "gym.model.token_contiguity.breaks";
}  // namespace metric_names

namespace attribute_keys {
inline constexpr std::string_view kQueueConstraint =
    "nemo.gym.http.connection_pool.queue_constraint";
inline constexpr std::string_view kQueueOutcome = "nemo.gym.http.connection_pool.queue_outcome";
inline constexpr std::string_view kDestination = "nemo.gym.http.destination.server.name";
inline constexpr std::string_view kRoute = "http.route";
inline constexpr std::string_view kRequestMethod = "http.request.method";
inline constexpr std::string_view kStatusCode = "http.response.status_code";
inline constexpr std::string_view kServerName = "http.server_name";
inline constexpr std::string_view kMethod = "http.method";
// Memory points name the sampled server like the resource attributes do.
inline constexpr std::string_view kMemoryServerName = "nemo.gym.server.name";
inline constexpr std::string_view kMemoryServerType = "nemo.gym.server.type";
inline constexpr std::string_view kMemoryPid = "process.pid";
inline constexpr std::string_view kMemoryType = "memory.type";
}  // namespace attribute_keys

// Who records (docs/design/telemetry-contract.md#process-roles). Servers take their role from their
// server type.
enum class ProcessRole { orchestrator, collector, resources_server, agent_server, model_server };

// The role of a server instance of `server_type` (resources_servers,
// responses_api_agents, responses_api_models); nullopt for anything else.
std::optional<ProcessRole> role_of_server_type(std::string_view server_type);

// The pool metrics of one destination label (configured server name,
// `remote_agent_service` or `external`). Owned by GymMetrics; the pointer stays
// valid as long as it.
class PoolDestination {
 public:
  // One acquisition started (gym.http.connection_pool.connect_total), immediate
  // or not.
  void acquisition_started() noexcept {
    if (counting_) connects_.fetch_add(1, std::memory_order_relaxed);
  }
  // One acquisition that waited, from the start of its wait to its end.
  void wait_finished(QueueConstraint constraint, QueueOutcome outcome, double ms) const noexcept {
    waits_[static_cast<int>(constraint)][static_cast<int>(outcome)].record(ms);
  }

 private:
  friend class GymMetrics;
  PoolDestination() = default;

  bool counting_ = false;  // false when metrics are off
  std::atomic<std::uint64_t> connects_{0};
  BoundHistogram waits_[3][2];  // [constraint][outcome]
};

class GymMetrics {
 public:
  // Creates the instruments of `role` on `provider`; a disabled provider gives
  // empty handles.
  GymMetrics(MeterProvider& provider, ProcessRole role);
  GymMetrics(const GymMetrics&) = delete;
  GymMetrics& operator=(const GymMetrics&) = delete;

  bool enabled() const noexcept { return enabled_; }
  ProcessRole role() const noexcept { return role_; }

  // gym.rollout.duration_ms: one sample per /run the handler ran for.
  void record_rollout(double ms) const noexcept { rollout_duration_.record(ms); }

  // gym.verify.duration_ms and gym.verify.success_rate: one call per
  // /verify the verifier ran for; `completed` when it returned a result (a 0.0
  // reward included).
  void record_verify(double ms, bool completed) noexcept;

  // gym.model.token_contiguity.breaks (a gym-cpp extension), model servers only: one turn whose
  // prompt_token_ids do not start with the previous turn's prompt_token_ids +
  // generation_token_ids. No point exists before the first break.
  void record_token_contiguity_break() const noexcept { token_contiguity_breaks_.add(1); }

  // gym.servers.active, orchestrator only.
  void set_servers_active(std::int64_t servers) const noexcept { servers_active_.record(servers); }

  // The series of the HTTP server metrics, bound for a caller that keeps them: the HTTP
  // server caches them per event loop, since their attribute sets are few and known early
  // (bound once). Empty handles when metrics are off.
  // http.server.request.duration: `route` is the matched template, empty when none matched;
  // `method` as http_method_label gives it.
  BoundHistogram http_request_series(std::string_view route, std::string_view method,
                                     int status) const;
  // http.server.active_requests: +1 when a request head arrived, -1 when its response is
  // complete or its connection dropped; `host` is the Host header (empty when absent).
  BoundUpDownCounter<std::int64_t> active_request_series(std::string_view host,
                                                         std::string_view method) const;

  // The pool metrics of `destination`, created when first asked for.
  // Cache the pointer: this takes a lock.
  PoolDestination* pool_destination(std::string_view destination);

  // The memory gauges report the latest sample `latest` returns at each collection (only that
  // sample's points). Call once, in the orchestrator.
  void observe_memory(std::function<std::optional<MemorySample>()> latest);

 private:
  const bool enabled_;
  const ProcessRole role_;
  MeterProvider& provider_;

  BoundHistogram rollout_duration_;
  BoundHistogram verify_duration_;
  BoundGauge<double> verify_success_rate_;
  std::atomic<std::uint64_t> verify_total_{0};
  std::atomic<std::uint64_t> verify_succeeded_{0};
  BoundGauge<std::int64_t> servers_active_;
  Counter<std::int64_t> token_contiguity_breaks_;
  Histogram http_request_duration_;
  UpDownCounter<std::int64_t> http_active_requests_;
  Histogram pool_queue_duration_;

  std::mutex destinations_mutex_;  // guards destinations_ (inserts and the
                                   // observable callback)
  std::unordered_map<std::string, std::unique_ptr<PoolDestination>> destinations_;
};

// The `http.request.method` value of a request method (OTel semantic
// conventions): the upper-case standard methods as they are, anything else
// `_OTHER`.
std::string_view http_method_label(std::string_view method) noexcept;

}  // namespace gym::telemetry
