#pragma once
// Built-in server implementations: the third config level `<impl>` selects one of these (anything
// else is an external server or a config error:
// docs/design/wire-compatibility.md#external-servers).
#include "core/config.h"
#include "http/client.h"
#include "http/router.h"
#include "http/server.h"
#include "telemetry/metrics/gym_metrics.h"
#include "telemetry/process_telemetry.h"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gym::servers {

// What an implementation sees when it builds its routes. It lives as long as the serving process;
// handlers may keep a reference to it.
struct ServerContext {
  ServerContext(const boost::json::object& global_config, core::ServerInstance self)
      : global(global_config), instance(std::move(self)) {}

  const boost::json::object& global;  // the complete merged config
  core::ServerInstance instance;      // config has `name: <instance>` added
  // The process's HTTP client (one per serving process, so one per worker). Set when the
  // process starts serving, after any fork: use it from handlers, not from add_routes.
  http::HttpClient* client = nullptr;
  // The process's gym_metrics facade, set like `client` (a disabled one when telemetry is off).
  telemetry::GymMetrics* metrics = nullptr;
  // The process's tracer, set like `client` (every span group off when traces are inactive).
  const telemetry::Tracer* tracer = nullptr;

  // "http://host:port" of a configured instance (hosts and ports are in the merged config).
  // Throws core::ConfigError when the instance is unknown or has no port. Remembered per name:
  // handlers call it for every outbound request.
  const std::string& url_of(std::string_view instance_name) const;

 private:
  mutable std::mutex urls_mu_;
  mutable std::map<std::string, std::string, std::less<>> urls_;
};

struct Implementation {
  std::string server_type;  // resources_servers | responses_api_agents | responses_api_models
  std::string name;         // impl key, e.g. "example_single_tool_call"
  std::string class_name;   // upstream class name: the session cookie prefix
  std::function<void(ServerContext&, http::Router&)> add_routes;
};

class Registry {
 public:
  void add(Implementation impl);
  const Implementation* find(std::string_view server_type, std::string_view name) const;
  core::ImplCatalog catalog() const;

 private:
  std::vector<Implementation> impls_;
};

// The bounds of the per-session state a server keeps (servers/session_table.h): entries expire
// after session_state_ttl_seconds (default 3600) without use, and beyond
// session_state_max_sessions (default 100000) the least recently used goes first.
struct SessionLimits {
  std::chrono::steady_clock::duration ttl = std::chrono::hours(1);
  std::size_t capacity = 100'000;
  // Throws core::ConfigError naming the key on an invalid value.
  static SessionLimits from_config(const boost::json::object& global);
};

// Listening options of one instance: host/port, num_workers, body limit (instance key over the
// top-level key), read timeout, session cookie `<ClassName>___<instance>`.
http::ServerOptions server_options(const boost::json::object& global,
                                   const core::ServerInstance& instance,
                                   const Implementation& impl);

// Serves `instance_name` from the merged config until SIGINT/SIGTERM; returns the exit code.
// Every serving process (each worker) starts its telemetry with `pipelines` before its HTTP
// client (docs/design/processes.md#workers); its settings are resolved and checked before anything
// serves.
int serve_instance(const boost::json::object& global, const std::string& instance_name,
                   const telemetry::PipelineFactory& pipelines, const Registry& registry);

// The Prometheus port of worker `worker` of an instance: its `prometheus_ports` entry (assigned
// by the orchestrator), else `base` + worker when a base port is set.
std::optional<int> prometheus_port_of(const core::ServerInstance& instance, int worker,
                                      std::optional<int> base);

}  // namespace gym::servers
