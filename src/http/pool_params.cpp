#include "core/config.h"
#include "http/client.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <fstream>
#include <limits>

namespace gym::http {

PoolParams PoolParams::from_config(const boost::json::object& cfg, int num_workers) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  const auto workers = static_cast<std::int64_t>(std::max(1, num_workers));
  // Aggregate limits are per server; each worker enforces its share
  // (docs/design/limits.md#connection-pool).
  auto share = [&](std::string_view key, std::int64_t def) -> std::size_t {
    std::int64_t aggregate = core::get_int(cfg, key, def, 0, kMax);
    std::int64_t per_worker = aggregate / workers;
    if (aggregate > 0 && per_worker == 0)
      throw core::ConfigError("config key `" + std::string(key) +
                              "` = " + std::to_string(aggregate) +
                              " is smaller than num_workers (" + std::to_string(workers) +
                              "): each worker would get 0, which means unlimited; raise it to at "
                              "least the number of workers or set 0 for unlimited");
    return static_cast<std::size_t>(per_worker);
  };
  const PoolParams d;  // the defaults are the struct's
  PoolParams p;
  p.total_limit =
      share("global_aiohttp_connector_limit", static_cast<std::int64_t>(d.aggregate_total));
  p.per_host_limit = share("global_aiohttp_connector_limit_per_host",
                           static_cast<std::int64_t>(d.aggregate_per_host));
  p.tcp_keepalive_idle_seconds = static_cast<int>(core::get_int(
      cfg, "global_aiohttp_tcp_keepalive_idle_seconds", d.tcp_keepalive_idle_seconds, 1, 32767));
  p.tcp_keepalive_interval_seconds =
      static_cast<int>(core::get_int(cfg, "global_aiohttp_tcp_keepalive_interval_seconds",
                                     d.tcp_keepalive_interval_seconds, 1, 32767));
  p.tcp_keepalive_probes = static_cast<int>(
      core::get_int(cfg, "global_aiohttp_tcp_keepalive_probes", d.tcp_keepalive_probes, 1, 127));
  p.retry_budget_seconds =
      core::get_double(cfg, "global_http_retry_budget_seconds", d.retry_budget_seconds, 0.0, 1e9);
  auto timeout = [&](std::string_view key, std::chrono::milliseconds def) {
    const double seconds =
        core::get_double(cfg, key, static_cast<double>(def.count()) / 1000.0, 0.0, 1e9);
    return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
  };
  p.connect_timeout = timeout("global_http_connect_timeout_seconds", d.connect_timeout);
  p.read_timeout = timeout("global_http_read_timeout_seconds", d.read_timeout);
  p.request_debug = core::get_bool(cfg, "global_aiohttp_client_request_debug", d.request_debug);
  p.workers = static_cast<int>(workers);
  p.aggregate_total = static_cast<std::size_t>(
      core::get_int(cfg, "global_aiohttp_connector_limit",
                    static_cast<std::int64_t>(d.aggregate_total), 0, kMax));
  p.aggregate_per_host = static_cast<std::size_t>(
      core::get_int(cfg, "global_aiohttp_connector_limit_per_host",
                    static_cast<std::int64_t>(d.aggregate_per_host), 0, kMax));
  auto intended = [&](std::string_view key) -> std::optional<std::size_t> {
    if (auto* v = core::find_path(cfg, key); !v || v->is_null()) return std::nullopt;
    auto n = core::get_int(cfg, key, 1, 1, kMax);
    return static_cast<std::size_t>((n + workers - 1) / workers);
  };
  p.intended_per_worker = intended("global_aiohttp_intended_concurrency");
  p.intended_per_host_per_worker = intended("global_aiohttp_intended_concurrency_per_host");
  return p;
}

std::vector<std::string> PoolParams::log_capacity_report() const {
  auto text = [](std::optional<std::size_t> v) {
    return !v ? std::string("unset") : *v == 0 ? std::string("unlimited") : std::to_string(*v);
  };
  rlimit fd_limit{};
  ::getrlimit(RLIMIT_NOFILE, &fd_limit);
  bool fd_infinite = fd_limit.rlim_cur == RLIM_INFINITY;
  std::optional<std::size_t> ports;
  if (std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range"); in) {
    std::size_t low = 0, high = 0;
    if (in >> low >> high && high >= low) ports = high - low + 1;
  }
  const std::size_t enforced_per_host = per_host_limit == 0 ? total_limit
                                        : total_limit == 0  ? per_host_limit
                                                            : std::min(total_limit, per_host_limit);
  // Sizing detail for whoever tunes the pool (-v); the warnings below are what users act on.
  spdlog::debug(
      "http client pool: workers={} aggregate_total={} aggregate_per_host={} effective_total={} "
      "effective_per_host={} intended_per_worker={} intended_per_host_per_worker={} "
      "file_descriptor_soft_limit={} ephemeral_ports_per_destination={}",
      workers, text(aggregate_total), text(aggregate_per_host), text(total_limit),
      text(enforced_per_host), text(intended_per_worker), text(intended_per_host_per_worker),
      fd_infinite ? std::string("unlimited") : std::to_string(fd_limit.rlim_cur),
      ports ? std::to_string(*ports) : std::string("unknown"));
  std::vector<std::string> warnings;
  if (intended_per_worker && total_limit != 0 && *intended_per_worker > total_limit)
    warnings.push_back("intended concurrency per worker (" + std::to_string(*intended_per_worker) +
                       ") exceeds the total connection limit per worker (" +
                       std::to_string(total_limit) + "); requests will queue");
  if (intended_per_host_per_worker && enforced_per_host != 0 &&
      *intended_per_host_per_worker > enforced_per_host)
    warnings.push_back("intended concurrency per host per worker (" +
                       std::to_string(*intended_per_host_per_worker) +
                       ") exceeds the per-host connection limit per worker (" +
                       std::to_string(enforced_per_host) + "); requests will queue");
  if (intended_per_worker && !fd_infinite && *intended_per_worker >= fd_limit.rlim_cur)
    warnings.push_back("intended concurrency per worker (" + std::to_string(*intended_per_worker) +
                       ") reaches the file descriptor soft limit (" +
                       std::to_string(fd_limit.rlim_cur) + "); raise `ulimit -n`");
  if (intended_per_host_per_worker && ports &&
      *intended_per_host_per_worker * static_cast<std::size_t>(workers) > *ports)
    warnings.push_back("intended concurrency per host (" +
                       std::to_string(*intended_per_host_per_worker * workers) +
                       ") exceeds the ephemeral ports available per destination (" +
                       std::to_string(*ports) + ")");
  for (const auto& w : warnings) spdlog::warn("http client pool: {}", w);
  return warnings;
}

}  // namespace gym::http
