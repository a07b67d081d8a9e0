#include "servers/registry.h"

#include "core/process_limits.h"

#include "http/client.h"
#include "http/pool_metrics.h"
#include "telemetry/metrics/memory_sampler.h"

#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include <unistd.h>

#include <algorithm>

namespace gym::servers {

void Registry::add(Implementation impl) { impls_.push_back(std::move(impl)); }

const Implementation* Registry::find(std::string_view server_type, std::string_view name) const {
  for (const auto& i : impls_)
    if (i.server_type == server_type && i.name == name) return &i;
  return nullptr;
}

core::ImplCatalog Registry::catalog() const {
  core::ImplCatalog c;
  for (auto t : core::kServerTypes) c[std::string(t)];
  for (const auto& i : impls_) c[i.server_type].push_back(i.name);
  return c;
}

const std::string& ServerContext::url_of(std::string_view instance_name) const {
  std::lock_guard lock(urls_mu_);
  if (auto it = urls_.find(instance_name); it != urls_.end()) return it->second;
  return urls_.emplace(std::string(instance_name), core::instance_url(global, instance_name))
      .first->second;
}

SessionLimits SessionLimits::from_config(const boost::json::object& global) {
  SessionLimits l;
  l.ttl =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(
          core::get_double(global, "session_state_ttl_seconds",
                           std::chrono::duration<double>(l.ttl).count(), 0.001, 1e9)));
  l.capacity = static_cast<std::size_t>(core::get_int(global, "session_state_max_sessions",
                                                      static_cast<std::int64_t>(l.capacity), 1,
                                                      1'000'000'000));
  return l;
}

http::ServerOptions server_options(const boost::json::object& global,
                                   const core::ServerInstance& instance,
                                   const Implementation& impl) {
  const auto& cfg = instance.config;
  const std::string key = instance.name + "." + instance.server_type + "." + instance.impl + ".";
  http::ServerOptions o;  // the defaults are the struct's
  o.host =
      core::get_string(cfg, "host", core::DeploymentAddresses::from_config(global).default_host);
  o.port = static_cast<std::uint16_t>(core::get_int(cfg, "port", o.port, 0, 65535));
  o.num_workers = static_cast<int>(core::get_int(cfg, "num_workers", o.num_workers, 0, 4096));
  auto body_limit = core::get_int(global, "http_max_request_body_bytes",
                                  static_cast<std::int64_t>(o.max_body_bytes), 1, 1ll << 40);
  o.max_body_bytes = static_cast<std::size_t>(
      core::get_int(cfg, "http_max_request_body_bytes", body_limit, 1, 1ll << 40));
  o.read_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(
      1000 * core::get_double(global, "http_request_read_timeout_seconds",
                              std::chrono::duration<double>(o.read_timeout).count(), 0.001,
                              86400)));
  o.body_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(
      1000 * core::get_double(global, "http_request_body_timeout_seconds",
                              std::chrono::duration<double>(o.body_timeout).count(), 0.001,
                              86400)));
  o.max_buffered_body_bytes = static_cast<std::size_t>(
      core::get_int(global, "http_max_buffered_body_bytes",
                    static_cast<std::int64_t>(o.max_buffered_body_bytes), 1, 1ll << 42));
  o.access_log = core::get_bool(global, "uvicorn_logging_show_200_ok", o.access_log);
  o.session_cookie_name = impl.class_name + "___" + instance.name;
  return o;
}

std::optional<int> prometheus_port_of(const core::ServerInstance& instance, int worker,
                                      std::optional<int> base) {
  if (const auto* ports = instance.config.if_contains("prometheus_ports");
      ports && ports->is_array()) {
    const auto& list = ports->get_array();
    if (worker >= 0 && static_cast<std::size_t>(worker) < list.size() &&
        list[static_cast<std::size_t>(worker)].is_int64())
      return static_cast<int>(list[static_cast<std::size_t>(worker)].get_int64());
    return std::nullopt;
  }
  if (base) return *base + worker;
  return std::nullopt;
}

int serve_instance(const boost::json::object& global, const std::string& instance_name,
                   const telemetry::PipelineFactory& pipelines, const Registry& registry) {
  auto instances = core::find_server_instances(global);
  auto it = std::find_if(instances.begin(), instances.end(),
                         [&](const core::ServerInstance& i) { return i.name == instance_name; });
  if (it == instances.end())
    throw core::ConfigError("no server instance named '" + instance_name +
                            "' in the config (NEMO_GYM_CONFIG_PATH)");
  const Implementation* impl = registry.find(it->server_type, it->impl);
  if (!impl)
    throw core::ConfigError("no built-in implementation '" + it->impl + "' for " + it->server_type);
  // Telemetry settings are checked here, before serving (an invalid value is a start-up error);
  // each serving process starts its own providers after any fork (the supervisor exports nothing:
  // docs/design/processes.md#workers).
  const auto getenv = telemetry::process_env();
  const auto settings = telemetry::resolve_checked_settings(global, getenv, pipelines);
  const auto shutdown_bound = telemetry::shutdown_bound(getenv);  // what the orchestrator left
  const auto run_id = telemetry::resolve_run_id(settings, getenv);
  const auto role = telemetry::role_of_server_type(it->server_type);
  ServerContext ctx{global, *it};
  ctx.instance.config["name"] = instance_name;
  http::Router router;
  impl->add_routes(ctx, router);
  auto options = server_options(global, ctx.instance, *impl);
  auto pool = http::PoolParams::from_config(global, options.num_workers);  // checked before serving
  core::raise_fd_limit();
  http::HttpServer server(std::move(router), options);
  auto port = server.bind();
  spdlog::info("{} ({}/{}) listening on http://{}:{}", instance_name, it->server_type, it->impl,
               options.host, port);
  std::unique_ptr<telemetry::ProcessTelemetry> process_telemetry;
  std::unique_ptr<telemetry::MemorySampler> own_memory;  // on another node than the orchestrator
  std::unique_ptr<http::PoolMetrics> pool_metrics;
  std::unique_ptr<http::HttpClient> client;
  http::ServeHooks hooks;
  hooks.on_start = [&](boost::asio::io_context& io, int worker) -> http::ServerInstrumentation {
    auto own = settings;
    own.prometheus_port = prometheus_port_of(ctx.instance, worker, settings.prometheus_port);
    process_telemetry = std::make_unique<telemetry::ProcessTelemetry>(
        pipelines, std::move(own), telemetry::ProcessIdentity{instance_name, it->server_type},
        run_id, role.value_or(telemetry::ProcessRole::model_server), getenv);
    auto& metrics = process_telemetry->metrics();
    if (metrics.enabled()) pool_metrics = std::make_unique<http::PoolMetrics>(metrics);
    client = std::make_unique<http::HttpClient>(io.get_executor(), pool, pool_metrics.get(),
                                                &process_telemetry->tracer());
    pool.log_capacity_report();  // the process's rollout pool, not the exporter's
    ctx.client = client.get();
    ctx.metrics = &metrics;
    // One sampler per server (in its first worker), over the whole tree from its root process.
    if (worker == 0 && getenv(telemetry::kSampleOwnMemoryVariable) &&
        process_telemetry->metrics_active() && settings.memory_profiling_enabled &&
        telemetry::MemorySampler::available()) {
      const long root = options.num_workers > 1 ? ::getppid() : ::getpid();
      own_memory = std::make_unique<telemetry::MemorySampler>(
          std::vector<telemetry::MemoryTarget>{{instance_name, it->server_type, root}},
          std::chrono::duration<double>(settings.memory_profiling_interval_seconds));
      metrics.observe_memory([sampler = own_memory.get()] { return sampler->latest(); });
      own_memory->start();
    }
    ctx.tracer = &process_telemetry->tracer();
    return {&metrics, ctx.tracer};
  };
  hooks.on_stop = [&] {
    // Requests cut off by shutdown end their spans as the loop goes: mark them truncated.
    if (process_telemetry) process_telemetry->tracer().begin_shutdown();
    ctx.client = nullptr;
    client.reset();
  };
  hooks.on_exit = [&] {
    if (own_memory) own_memory->stop();  // its final sample is exported
    // Bounded final export, within what the orchestrator's shutdown left for it.
    if (process_telemetry) process_telemetry->shutdown(shutdown_bound);
  };
  return server.run(hooks);
}

}  // namespace gym::servers
