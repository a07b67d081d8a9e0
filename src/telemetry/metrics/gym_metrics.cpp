#include "telemetry/metrics/gym_metrics.h"

#include "telemetry/metrics/memory_sampler.h"

#include <array>

namespace gym::telemetry {

namespace {

using namespace metric_names;

// docs/design/telemetry-contract.md#histogram-buckets: upstream's duration list; a millisecond list
// for verify; upstream's pool list; the OTel semantic-convention default buckets (seconds) for the
// HTTP server.
const std::vector<double> kRolloutBuckets{100,    250,    500,     1000,    2500,
                                          5000,   10000,  30000,   60000,   120000,
                                          300000, 600000, 1200000, 1800000, 3600000};
const std::vector<double> kVerifyBuckets{0.5, 1,   2.5,  5,    10,   25,    50,    100,
                                         250, 500, 1000, 2500, 5000, 10000, 30000, 60000};
const std::vector<double> kPoolQueueBuckets{0.01, 0.05, 0.1, 0.25, 0.5, 1,    2.5,  5,    10,
                                            25,   50,   100, 250,  500, 1000, 5000, 30000};
const std::vector<double> kHttpDurationBuckets{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25,
                                               0.5,   0.75, 1,     2.5,  5,     7.5, 10};

constexpr std::array<std::string_view, 3> kConstraintValues{"total", "per_host", "unknown"};
constexpr std::array<std::string_view, 2> kOutcomeValues{"ok", "abandoned"};

bool has_http_server(ProcessRole r) {
  return r == ProcessRole::resources_server || r == ProcessRole::agent_server ||
         r == ProcessRole::model_server;
}

}  // namespace

std::optional<ProcessRole> role_of_server_type(std::string_view server_type) {
  if (server_type == "resources_servers") return ProcessRole::resources_server;
  if (server_type == "responses_api_agents") return ProcessRole::agent_server;
  if (server_type == "responses_api_models") return ProcessRole::model_server;
  return std::nullopt;
}

std::string_view http_method_label(std::string_view method) noexcept {
  for (std::string_view known :
       {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"})
    if (method == known) return known;
  return "_OTHER";
}

GymMetrics::GymMetrics(MeterProvider& provider, ProcessRole role)
    : enabled_(provider.enabled()), role_(role), provider_(provider) {
  auto& p = provider_;
  if (role == ProcessRole::agent_server) {
    rollout_duration_ =
        p.create_histogram(std::string(kRolloutDuration), "ms",
                           "Duration of agent /run calls, failed ones included", kRolloutBuckets)
            .bind();
  }
  if (role == ProcessRole::resources_server) {
    verify_duration_ =
        p.create_histogram(std::string(kVerifyDuration), "ms",
                           "Duration of resources-server /verify calls", kVerifyBuckets)
            .bind();
    verify_success_rate_ =
        p.create_gauge<double>(std::string(kVerifySuccessRate), "",
                               "Fraction of /verify calls whose verifier completed")
            .bind();
  }
  if (role == ProcessRole::orchestrator) {
    servers_active_ = p.create_gauge<std::int64_t>(std::string(kServersActive), "",
                                                   "Servers started by the orchestrator")
                          .bind();
  }
  if (role == ProcessRole::model_server) {
    token_contiguity_breaks_ = p.create_counter<std::int64_t>(
        std::string(kTokenContiguityBreaks), "{break}",
        "gym-cpp extension (not in NeMo Gym): model turns whose prompt_token_ids do not start "
        "with the previous turn's prompt_token_ids + generation_token_ids (vllm_model's "
        "on-policy check)");
  }
  if (has_http_server(role)) {
    http_request_duration_ =
        p.create_histogram(std::string(kHttpRequestDuration), "s",
                           "Duration of HTTP server requests", kHttpDurationBuckets);
    http_active_requests_ = p.create_up_down_counter<std::int64_t>(
        std::string(kHttpActiveRequests), "{request}", "HTTP server requests in flight");
  }
  // Every role owns a connection pool.
  pool_queue_duration_ = p.create_histogram(std::string(kPoolQueueDuration), "ms",
                                            "Time acquisitions waited for a pooled connection "
                                            "(only those that waited)",
                                            kPoolQueueBuckets);
  p.create_observable_counter<std::int64_t>(
      std::string(kPoolConnectTotal), "{connection}",
      "Connection acquisitions started, per destination",
      [this](ObservableResult<std::int64_t>& out) {
        std::lock_guard lock(destinations_mutex_);
        for (const auto& [name, d] : destinations_)
          out.observe(static_cast<std::int64_t>(d->connects_.load(std::memory_order_relaxed)),
                      {{attribute_keys::kDestination, name}});
      });
}

void GymMetrics::record_verify(double ms, bool completed) noexcept {
  if (!verify_success_rate_) return;
  verify_duration_.record(ms);
  // The two counters move together closely enough: a concurrent reader may see
  // one ahead of the other for an instant, and the next call sets the gauge
  // from both again.
  const auto total = verify_total_.fetch_add(1, std::memory_order_relaxed) + 1;
  const auto succeeded = completed ? verify_succeeded_.fetch_add(1, std::memory_order_relaxed) + 1
                                   : verify_succeeded_.load(std::memory_order_relaxed);
  verify_success_rate_.record(static_cast<double>(succeeded) / static_cast<double>(total));
}

BoundHistogram GymMetrics::http_request_series(std::string_view route, std::string_view method,
                                               int status) const {
  if (!http_request_duration_) return {};
  if (route.empty())
    return http_request_duration_.bind(
        {{attribute_keys::kRequestMethod, method}, {attribute_keys::kStatusCode, status}});
  return http_request_duration_.bind({{attribute_keys::kRoute, route},
                                      {attribute_keys::kRequestMethod, method},
                                      {attribute_keys::kStatusCode, status}});
}

BoundUpDownCounter<std::int64_t> GymMetrics::active_request_series(std::string_view host,
                                                                   std::string_view method) const {
  if (!http_active_requests_) return {};
  if (host.empty()) return http_active_requests_.bind({{attribute_keys::kMethod, method}});
  return http_active_requests_.bind(
      {{attribute_keys::kServerName, host}, {attribute_keys::kMethod, method}});
}

PoolDestination* GymMetrics::pool_destination(std::string_view destination) {
  std::lock_guard lock(destinations_mutex_);
  auto it = destinations_.find(std::string(destination));
  if (it != destinations_.end()) return it->second.get();
  std::unique_ptr<PoolDestination> d(new PoolDestination());
  d->counting_ = enabled_;
  for (std::size_t c = 0; c < kConstraintValues.size(); ++c)
    for (std::size_t o = 0; o < kOutcomeValues.size(); ++o)
      d->waits_[c][o] =
          pool_queue_duration_.bind({{attribute_keys::kQueueConstraint, kConstraintValues[c]},
                                     {attribute_keys::kQueueOutcome, kOutcomeValues[o]},
                                     {attribute_keys::kDestination, destination}});
  return destinations_.emplace(std::string(destination), std::move(d)).first->second.get();
}

void GymMetrics::observe_memory(std::function<std::optional<MemorySample>()> latest) {
  auto& p = provider_;
  auto shared = std::make_shared<std::function<std::optional<MemorySample>()>>(std::move(latest));
  // Each gauge reports the points of the latest sample only: a series missing from it (a PSS the
  // sample could not read) is not exported.
  auto per_target = [shared](auto&& observe_target) {
    return [shared, observe_target](ObservableResult<std::int64_t>& out) {
      auto sample = (*shared)();
      if (!sample) return;
      for (const auto& t : sample->targets) observe_target(out, t);
    };
  };
  auto target_attributes = [](const MemorySample::Target& t, std::string_view type) {
    AttributeSet set{{attribute_keys::kMemoryServerName, t.target.server_name},
                     {attribute_keys::kMemoryServerType, t.target.server_type},
                     {attribute_keys::kMemoryPid, static_cast<std::int64_t>(t.target.root_pid)},
                     {attribute_keys::kMemoryType, type}};
    return set;
  };
  p.create_observable_gauge<std::int64_t>(
      std::string(kServerMemoryUsage), "By", "Memory of each server's process tree",
      per_target(
          [target_attributes](ObservableResult<std::int64_t>& out, const MemorySample::Target& t) {
            out.observe(t.memory.rss, target_attributes(t, "rss"));
            if (t.memory.pss) out.observe(*t.memory.pss, target_attributes(t, "pss"));
          }));
  p.create_observable_gauge<std::int64_t>(
      std::string(kServerMemoryPeak), "By", "Highest sampled memory of each server's process tree",
      per_target(
          [target_attributes](ObservableResult<std::int64_t>& out, const MemorySample::Target& t) {
            out.observe(t.rss_peak, target_attributes(t, "rss"));
            if (t.memory.pss && t.pss_peak) out.observe(*t.pss_peak, target_attributes(t, "pss"));
          }));
  p.create_observable_gauge<std::int64_t>(
      std::string(kServerProcesses), "{process}", "Processes in each server's process tree",
      per_target([](ObservableResult<std::int64_t>& out, const MemorySample::Target& t) {
        out.observe(t.memory.processes,
                    {{attribute_keys::kMemoryServerName, t.target.server_name},
                     {attribute_keys::kMemoryServerType, t.target.server_type},
                     {attribute_keys::kMemoryPid, static_cast<std::int64_t>(t.target.root_pid)}});
      }));
  auto host = [shared](std::int64_t (*pick)(const MemorySample&)) {
    return [shared, pick](ObservableResult<std::int64_t>& out) {
      auto sample = (*shared)();
      if (sample && sample->host) out.observe(pick(*sample));
    };
  };
  p.create_observable_gauge<std::int64_t>(
      std::string(kHostMemoryUsage), "By", "Host memory in use (total - available)",
      host([](const MemorySample& s) { return s.host->usage; }));
  p.create_observable_gauge<std::int64_t>(
      std::string(kHostMemoryAvailable), "By", "Host memory available",
      host([](const MemorySample& s) { return s.host->available; }));
  p.create_observable_gauge<std::int64_t>(
      std::string(kHostMemoryTotal), "By", "Host memory in total",
      host([](const MemorySample& s) { return s.host->total; }));
  p.create_observable_gauge<std::int64_t>(std::string(kHostMemoryPeak), "By",
                                          "Highest sampled host memory in use",
                                          host([](const MemorySample& s) { return s.host_peak; }));
}

}  // namespace gym::telemetry
