#pragma once
// Async HTTP/1.1 server: one event loop per serving process, one coroutine per connection, bounded
// inputs, graceful shutdown on SIGINT/SIGTERM, optional forked workers
// (docs/reference/http-server.md, docs/design/processes.md#workers). Beast stays inside server.cpp
// (and its internal server_metrics.h); the supervisor of forked workers is server_workers.cpp.
#include "http/router.h"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace gym::telemetry {
class GymMetrics;
class Tracer;
}  // namespace gym::telemetry

namespace gym::http {

struct ServerOptions {
  std::string host = "127.0.0.1";                  // loopback unless configured
  std::uint16_t port = 0;                          // 0: the OS chooses
  std::size_t max_body_bytes = 64ull << 20;        // http_max_request_body_bytes -> 413
  std::size_t max_header_bytes = 64u << 10;        // request head limit -> 431
  std::chrono::milliseconds read_timeout{30'000};  // http_request_read_timeout_seconds
  // http_request_body_timeout_seconds: a whole request (head and body) must arrive within this,
  // however slowly it trickles (read_timeout bounds each read only).
  std::chrono::milliseconds body_timeout{300'000};
  // http_max_buffered_body_bytes: request bodies held at once by one serving process (bodies
  // being received plus those being handled); a request that would pass it gets 503.
  std::size_t max_buffered_body_bytes = 512ull << 20;
  std::chrono::milliseconds keep_alive_idle{30'000};   // idle connection lifetime
  std::chrono::milliseconds shutdown_grace{500};       // in-flight requests at shutdown
  std::chrono::milliseconds worker_stop_grace{7'000};  // root waits this long for workers
  int num_workers = 1;                                 // > 1: forked workers
  std::string session_cookie_name;                     // empty: no session middleware
  std::string session_signing_key;  // HMAC key of the cookies; empty: process_session_key()
  bool access_log = false;          // uvicorn_logging_show_200_ok
};

// Per-process counters, read by tests and (later) telemetry. Only touched on the loop thread.
struct ServerStats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_open = 0;
  std::uint64_t max_connections_open = 0;
  std::uint64_t requests = 0;
};

// What a serving process records its requests into: the server metrics and SERVER spans (with
// context extraction); either may be null.
struct ServerInstrumentation {
  const telemetry::GymMetrics* metrics = nullptr;
  const telemetry::Tracer* tracer = nullptr;
};

struct ServeHooks {
  // Runs in every serving process (each worker after fork, `worker` counting from 0; 0 without
  // workers) on its loop before accepting: create the process's telemetry and HTTP client here.
  std::function<ServerInstrumentation(boost::asio::io_context&, int worker)> on_start;
  // Runs in every serving process after the loop stopped, while it still exists (release what
  // uses the loop, such as the HTTP client, here).
  std::function<void()> on_stop;
  // Runs last, after the loop is gone: requests cut off by shutdown have ended by then (their
  // handlers' cleanup ran and recorded), so flush telemetry here.
  std::function<void()> on_exit;
};

class HttpServer {
 public:
  HttpServer(Router router, ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens; returns the bound port. Throws std::runtime_error naming host:port.
  std::uint16_t bind();
  std::uint16_t port() const { return port_; }  // the bound port (0 before bind)
  // Serves until SIGINT or SIGTERM, then shuts down gracefully. Returns the exit code. With
  // num_workers > 1 this process forks the workers and supervises them.
  int run(const ServeHooks& hooks = {});

  // Serves on a loop the caller owns and runs, with no signal handling (the orchestrator's
  // head server). stop() shuts down gracefully and stops `io` once the last request is done;
  // it may be called from any thread.
  void start(boost::asio::io_context& io);
  void stop();

  const ServerStats& stats() const { return stats_; }
  const ServerOptions& options() const { return options_; }

  struct Loop;  // implementation detail of server.cpp

 private:
  int serve(const ServeHooks& hooks, int worker);  // the event loop of one serving process
  int supervise(const ServeHooks& hooks);

  Router router_;
  ServerOptions options_;
  std::uint16_t port_ = 0;
  ServerStats stats_;
  int listen_fd_ = -1;
  std::unique_ptr<Loop> loop_;  // set by start()
};

}  // namespace gym::http
