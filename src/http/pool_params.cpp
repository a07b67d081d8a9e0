#include "core/config.h"
#include "http/client.h"

#include <limits>

namespace gym::http {

PoolParams PoolParams::from_config(const boost::json::object& cfg, int num_workers) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  const auto workers = static_cast<std::int64_t>(std::max(1, num_workers));
  // Aggregate limits are per server; each worker enforces its share (telemetry.md 6.7).
  auto share = [&](std::string_view key, std::int64_t def) -> std::size_t {
    std::int64_t aggregate = core::get_int(cfg, key, def, 0, kMax);
    std::int64_t per_worker = aggregate / workers;
    if (aggregate > 0 && per_worker == 0)
      throw core::ConfigError("config key `" + std::string(key) + "` = " +
                              std::to_string(aggregate) + " is smaller than num_workers (" +
                              std::to_string(workers) +
                              "): each worker would get 0, which means unlimited; raise it to at "
                              "least the number of workers or set 0 for unlimited");
    return static_cast<std::size_t>(per_worker);
  };
  PoolParams p;
  p.total_limit = share("global_aiohttp_connector_limit", 102400);
  p.per_host_limit = share("global_aiohttp_connector_limit_per_host", 1024);
  p.tcp_keepalive_idle_seconds =
      static_cast<int>(core::get_int(cfg, "global_aiohttp_tcp_keepalive_idle_seconds", 60, 1, 32767));
  p.tcp_keepalive_interval_seconds = static_cast<int>(
      core::get_int(cfg, "global_aiohttp_tcp_keepalive_interval_seconds", 10, 1, 32767));
  p.tcp_keepalive_probes =
      static_cast<int>(core::get_int(cfg, "global_aiohttp_tcp_keepalive_probes", 3, 1, 127));
  p.retry_budget_seconds =
      core::get_double(cfg, "global_http_retry_budget_seconds", 300.0, 0.0, 1e9);
  p.request_debug = core::get_bool(cfg, "global_aiohttp_client_request_debug", false);
  return p;
}

}  // namespace gym::http
