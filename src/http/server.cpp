#include "http/server.h"

#include "http/session_cookie.h"
#include "telemetry/gym_metrics.h"

#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <netdb.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gym::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

namespace {

Method to_method(bhttp::verb v) {
  switch (v) {
    case bhttp::verb::get:
      return Method::get;
    case bhttp::verb::head:
      return Method::head;
    case bhttp::verb::post:
      return Method::post;
    case bhttp::verb::put:
      return Method::put;
    case bhttp::verb::patch:
      return Method::patch;
    case bhttp::verb::delete_:
      return Method::del;
    case bhttp::verb::options:
      return Method::options;
    default:
      return Method::other;
  }
}

// The bound series of one loop's server metrics (telemetry.md 6.6). A server sees few attribute
// sets: its routes x methods x statuses, and the one or two Host values its clients send. Each is
// bound the first time and found again by pointer and short string compares instead of the SDK's
// sort-and-hash lookup (style.md 3). Loop thread only.
class ServerSeries {
 public:
  explicit ServerSeries(const telemetry::GymMetrics& metrics) : metrics_(metrics) {}

  // `route` points into the router (or is empty); `method` is a static label.
  telemetry::BoundHistogram duration(std::string_view route, std::string_view method, int status) {
    const DurationKey key{route.data(), route.size(), method.data(), status};
    if (auto it = durations_.find(key); it != durations_.end()) return it->second;
    auto series = metrics_.http_request_series(route, method, status);
    if (durations_.size() < kMaxCached) durations_.emplace(key, series);
    return series;
  }

  telemetry::BoundUpDownCounter<std::int64_t> active(std::string_view host,
                                                     std::string_view method) {
    for (const auto& a : actives_)
      if (a.method == method.data() && a.host == host) return a.series;
    auto series = metrics_.active_request_series(host, method);
    // Past a few hosts (a client inventing Host values) the SDK's own lookup takes over.
    if (actives_.size() < kMaxCachedHosts)
      actives_.push_back({std::string(host), method.data(), series});
    return series;
  }

 private:
  static constexpr std::size_t kMaxCached = 1024;
  static constexpr std::size_t kMaxCachedHosts = 16;
  struct DurationKey {
    const char* route;
    std::size_t route_size;
    const char* method;
    int status;
    bool operator==(const DurationKey&) const = default;
  };
  struct DurationKeyHash {
    std::size_t operator()(const DurationKey& k) const noexcept {
      auto h = std::hash<const void*>()(k.route) ^ (std::hash<const void*>()(k.method) << 1);
      return h ^ (static_cast<std::size_t>(k.status) << 3) ^ k.route_size;
    }
  };
  struct Active {
    std::string host;
    const char* method;
    telemetry::BoundUpDownCounter<std::int64_t> series;
  };

  const telemetry::GymMetrics& metrics_;
  std::unordered_map<DurationKey, telemetry::BoundHistogram, DurationKeyHash> durations_;
  std::vector<Active> actives_;
};

}  // namespace

// One serving process's loop state. Connections register here so shutdown can close them.
struct HttpServer::Loop {
  asio::io_context& io;
  const Router& router;
  const ServerOptions& opt;
  ServerStats& stats;
  std::optional<SessionCookie> cookie;
  tcp::acceptor acceptor;
  struct Conn {
    beast::tcp_stream* stream;
    bool busy;
  };
  std::list<Conn> conns;
  std::size_t active_requests = 0;
  bool stopping = false;
  std::unique_ptr<ServerSeries> metrics;  // null: not instrumented (the head server)

  Loop(asio::io_context& io, const Router& r, const ServerOptions& o, ServerStats& s, int fd)
      : io(io), router(r), opt(o), stats(s), acceptor(io) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    acceptor.assign(addr.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd);
    if (!o.session_cookie_name.empty()) cookie.emplace(o.session_cookie_name);
  }

  void close(beast::tcp_stream& s) {
    boost::system::error_code ec;
    s.socket().close(ec);
  }

  void begin_shutdown() {
    if (stopping) return;
    stopping = true;
    boost::system::error_code ec;
    acceptor.close(ec);
    for (auto& c : conns)
      if (!c.busy) close(*c.stream);
    if (active_requests == 0) {
      io.stop();
      return;
    }
    auto timer = std::make_shared<asio::steady_timer>(io, opt.shutdown_grace);
    timer->async_wait([this, timer](boost::system::error_code) {
      for (auto& c : conns) close(*c.stream);
      io.stop();
    });
  }

  // The session of a request: the id of a valid signed cookie, else a new one (runtime.md 4.3).
  std::string session_for(std::string_view cookie_value) const {
    std::optional<std::string> id;
    if (!cookie_value.empty()) id = cookie->verify(cookie_value);
    return id ? std::move(*id) : new_uuid4();
  }

  void request_finished() {
    --active_requests;
    if (stopping && active_requests == 0) io.stop();
  }
};

namespace {
using Loop = HttpServer::Loop;
using Clock = std::chrono::steady_clock;

// The server metrics of one request: in flight from its head to the end of its response or of
// its connection, and one duration sample when a response was written.
class RequestMetrics {
 public:
  RequestMetrics(ServerSeries* series, const bhttp::request_header<>& head) : series_(series) {
    if (!series_) return;
    start_ = Clock::now();
    method_ = telemetry::http_method_label(head.method_string());
    try {
      active_ = series_->active(std::string_view(head[bhttp::field::host]), method_);
    } catch (...) {  // out of memory: this request goes unmeasured, never unserved
      series_ = nullptr;
      return;
    }
    active_.add(1);
  }
  ~RequestMetrics() { active_.add(-1); }
  RequestMetrics(const RequestMetrics&) = delete;
  RequestMetrics& operator=(const RequestMetrics&) = delete;

  // The last byte of a response with `status` went to the socket.
  void responded(std::string_view route, int status) const {
    if (!series_) return;
    try {
      series_->duration(route, method_, status)
          .record(std::chrono::duration<double>(Clock::now() - start_).count());
    } catch (...) {
    }
  }

 private:
  ServerSeries* series_;
  Clock::time_point start_;
  std::string_view method_;                             // a static label
  telemetry::BoundUpDownCounter<std::int64_t> active_;  // empty when not measured
};

// The route template a request head would be dispatched to; empty when none matches.
std::string_view route_of(const Loop& loop, const bhttp::request_header<>& head) {
  auto match = loop.router.match(to_method(head.method()), routing_path(head.target()));
  return match.handler ? match.route : std::string_view();
}

// Writes a small error response and closes, draining what the client still sends for a
// moment so the response is not lost to a TCP reset (a "lingering close").
// Every response carries the session cookie, rejections too; `cookie_header` is the request's
// Cookie header when its head was parsed; `metrics` times the request when its head was (the
// sample ends when the response is written, before the drain).
asio::awaitable<void> reject_and_close(Loop& loop, beast::tcp_stream& stream, int status,
                                       Response res, std::string_view cookie_header = {},
                                       const RequestMetrics* metrics = nullptr,
                                       std::string_view route = {}) {
  if (loop.cookie) {
    std::string value;
    for (const auto& [name, v] : parse_cookie_header(cookie_header))
      if (name == loop.cookie->name()) value = v;
    res.headers.push_back({"Set-Cookie", loop.cookie->set_cookie_header(loop.session_for(value))});
  }
  bhttp::response<bhttp::string_body> out{static_cast<bhttp::status>(status), 11};
  out.set(bhttp::field::content_type, res.content_type);
  for (const auto& h : res.headers) out.insert(h.name, h.value);
  out.set(bhttp::field::connection, "close");
  out.body() = res.body;
  out.prepare_payload();
  stream.expires_after(std::chrono::seconds(5));
  auto [ec, n] = co_await bhttp::async_write(stream, out, kTuple);
  (void)n;
  if (ec) co_return;
  if (metrics) metrics->responded(route, status);
  boost::system::error_code sec;
  stream.socket().shutdown(tcp::socket::shutdown_send, sec);
  std::array<char, 16384> sink;
  stream.expires_after(std::chrono::seconds(1));
  for (std::size_t drained = 0; drained < (8u << 20);) {
    auto [rec, got] = co_await stream.async_read_some(asio::buffer(sink), kTuple);
    if (rec) break;
    drained += got;
  }
}

Response body_too_large(std::size_t limit) {
  return Response::detail(413, boost::json::string("Request body too large (limit " +
                                                   std::to_string(limit) + " bytes)"));
}

Request to_request(bhttp::request<bhttp::string_body>&& in) {
  Request req;
  req.method = to_method(in.method());
  req.target = std::string(in.target());
  req.path = routing_path(req.target);
  req.headers.reserve(8);
  for (const auto& f : in)
    req.headers.push_back({std::string(f.name_string()), std::string(f.value())});
  req.body = std::move(in.body());
  return req;
}

asio::awaitable<Response> dispatch(Loop& loop, Request& req) {
  if (loop.cookie) req.session_id = loop.session_for(req.cookie(loop.cookie->name()));
  Response res;
  auto match = loop.router.match(req.method, req.path);
  req.route = match.handler ? match.route : std::string_view();  // none for 404 and 405
  if (match.handler) {
    try {
      res = co_await (*match.handler)(req);
    } catch (const std::exception& e) {
      spdlog::error("{} {}: handler failed: {}", to_string(req.method), req.path, e.what());
      res = exception_response(e);
    } catch (...) {
      res = Response::json(boost::json::string("UnknownError: non-standard exception"), 500);
    }
  } else if (match.method_not_allowed) {
    res = Response::detail(405, "Method Not Allowed");
  } else {
    res = Response::detail(404, "Not Found");
  }
  if (loop.cookie)
    res.headers.push_back({"Set-Cookie", loop.cookie->set_cookie_header(req.session_id)});
  co_return res;
}

asio::awaitable<void> connection(Loop& loop, tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  auto self = loop.conns.insert(loop.conns.end(), Loop::Conn{&stream, false});
  ++loop.stats.connections_open;
  loop.stats.max_connections_open =
      std::max(loop.stats.max_connections_open, loop.stats.connections_open);
  const auto& opt = loop.opt;

  for (;;) {
    if (loop.stopping) break;
    self->busy = false;
    if (buffer.size() == 0) {
      // Idle keep-alive wait: the read timeout starts with the first byte of the next request.
      stream.expires_after(opt.keep_alive_idle);
      auto [ec, n] = co_await stream.async_read_some(buffer.prepare(8192), kTuple);
      if (ec) break;
      buffer.commit(n);
    }
    self->busy = true;
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(opt.max_header_bytes));
    parser.body_limit(opt.max_body_bytes);
    stream.expires_after(opt.read_timeout);
    auto [hec, hn] = co_await bhttp::async_read_header(stream, buffer, parser, kTuple);
    (void)hn;
    if (hec == bhttp::error::header_limit) {
      co_await reject_and_close(loop, stream, 431,
                                Response::detail(431, "Request header fields too large"));
      break;
    }
    if (hec == bhttp::error::body_limit) {  // the head arrived; its Content-Length is too big
      RequestMetrics metrics(loop.metrics.get(), parser.get());
      co_await reject_and_close(loop, stream, 413, body_too_large(opt.max_body_bytes),
                                parser.get()[bhttp::field::cookie], &metrics,
                                route_of(loop, parser.get()));
      break;
    }
    if (hec == beast::error::timeout || hec == bhttp::error::end_of_stream ||
        hec == asio::error::eof || hec == asio::error::operation_aborted ||
        hec == asio::error::connection_reset || hec == asio::error::bad_descriptor)
      break;
    if (hec) {
      co_await reject_and_close(
          loop, stream, 400,
          Response::detail(400, boost::json::string("Invalid HTTP request: " + hec.message())));
      break;
    }
    RequestMetrics metrics(loop.metrics.get(), parser.get());
    if (auto expect = parser.get()[bhttp::field::expect]; beast::iequals(expect, "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      auto [cec, cn] = co_await asio::async_write(stream, asio::buffer(kContinue), kTuple);
      (void)cn;
      if (cec) break;
    }
    bool body_failed = false;
    while (!parser.is_done()) {
      // A body must keep making progress; each read gets the full timeout again.
      stream.expires_after(opt.read_timeout);
      auto [bec, bn] = co_await bhttp::async_read_some(stream, buffer, parser, kTuple);
      (void)bn;
      if (bec == bhttp::error::body_limit) {
        co_await reject_and_close(loop, stream, 413, body_too_large(opt.max_body_bytes),
                                  parser.get()[bhttp::field::cookie], &metrics,
                                  route_of(loop, parser.get()));
      }
      if (bec) {
        body_failed = true;
        break;
      }
    }
    if (body_failed) break;
    stream.expires_never();

    bool keep_alive = parser.get().keep_alive();
    Request req = to_request(parser.release());
    ++loop.active_requests;
    ++loop.stats.requests;
    Response res = co_await dispatch(loop, req);

    bhttp::response<bhttp::string_body> out{static_cast<bhttp::status>(res.status), 11};
    out.set(bhttp::field::content_type, res.content_type);
    for (auto& h : res.headers) out.insert(h.name, h.value);
    out.body() = std::move(res.body);
    keep_alive = keep_alive && !loop.stopping;
    out.keep_alive(keep_alive);
    out.prepare_payload();
    stream.expires_after(opt.keep_alive_idle);  // a client that stops reading cannot pin us
    auto [wec, wn] = co_await bhttp::async_write(stream, out, kTuple);
    (void)wn;
    if (!wec) metrics.responded(req.route, res.status);
    loop.request_finished();
    if (opt.access_log) spdlog::info("{} {} {}", to_string(req.method), req.target, res.status);
    if (wec || !keep_alive) break;
  }
  boost::system::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream.socket().close(ec);
  loop.conns.erase(self);
  --loop.stats.connections_open;
}

void start_connection(Loop& loop, tcp::socket socket) {
  boost::system::error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  ++loop.stats.connections_accepted;
  asio::co_spawn(loop.io, connection(loop, std::move(socket)), [](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      spdlog::error("connection task failed: {}", ex.what());
    }
  });
}

asio::awaitable<void> accept_loop(Loop& loop) {
  boost::system::error_code ec;
  loop.acceptor.non_blocking(true, ec);
  for (;;) {
    auto [aec, socket] = co_await loop.acceptor.async_accept(kTuple);
    if (loop.stopping) co_return;
    if (aec) {
      if (aec == asio::error::operation_aborted || aec == asio::error::bad_descriptor) co_return;
      // EMFILE and friends: back off briefly instead of spinning.
      spdlog::warn("accept failed: {}", aec.message());
      asio::steady_timer t(loop.io, std::chrono::milliseconds(50));
      co_await t.async_wait(kTuple);
      continue;
    }
    start_connection(loop, std::move(socket));
    // Drain the backlog now: one accept per pass of a busy loop would leave thousands of
    // connections waiting in the kernel queue.
    for (int i = 0; i < 256 && !loop.stopping; ++i) {
      tcp::socket more(loop.io);
      loop.acceptor.accept(more, ec);  // non-blocking: would_block once the queue is empty
      if (ec) break;
      start_connection(loop, std::move(more));
    }
  }
}

int listen_on(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0)
    throw std::runtime_error("cannot resolve bind host '" + host + "': " + gai_strerror(rc));
  std::string last_error = "no address";
  int fd = -1;
  for (auto* ai = res; ai; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 4096) == 0) break;
    last_error = std::strerror(errno);
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  if (fd < 0)
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                             last_error + " (is the port already in use?)");
  return fd;
}

std::uint16_t bound_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

}  // namespace

HttpServer::HttpServer(Router router, ServerOptions options)
    : router_(std::move(router)), options_(std::move(options)) {}

void HttpServer::start(asio::io_context& io) {
  bind();
  loop_ = std::make_unique<Loop>(io, router_, options_, stats_, std::exchange(listen_fd_, -1));
  asio::co_spawn(io, accept_loop(*loop_), asio::detached);
}

void HttpServer::stop() {
  if (!loop_) return;
  asio::post(loop_->io, [loop = loop_.get()] { loop->begin_shutdown(); });
}

HttpServer::~HttpServer() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

std::uint16_t HttpServer::bind() {
  if (listen_fd_ < 0) listen_fd_ = listen_on(options_.host, options_.port);
  return bound_port(listen_fd_);
}

int HttpServer::run(const ServeHooks& hooks) {
  bind();
  return options_.num_workers > 1 ? supervise(hooks) : serve(hooks, 0);
}

int HttpServer::serve(const ServeHooks& hooks, int worker) {
  {
    asio::io_context io(1);
    // The loop's acceptor takes the listening socket over: when shutdown closes the acceptor,
    // no other descriptor of this process keeps the socket listening (a kept copy would let the
    // kernel complete new connections that nobody serves).
    const int fd = std::exchange(listen_fd_, -1);
    Loop loop(io, router_, options_, stats_, fd);
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](boost::system::error_code ec, int sig) {
      if (ec) return;
      spdlog::info("received signal {}, shutting down", sig);
      loop.begin_shutdown();
    });
    if (hooks.on_start) {
      const telemetry::GymMetrics* metrics = hooks.on_start(io, worker);
      if (metrics && metrics->enabled()) loop.metrics = std::make_unique<ServerSeries>(*metrics);
    }
    asio::co_spawn(io, accept_loop(loop), asio::detached);
    io.run();
    if (hooks.on_stop) hooks.on_stop();
  }  // the loop's remaining coroutines (requests cut off at shutdown) are destroyed here
  if (hooks.on_exit) hooks.on_exit();
  return 0;
}

int HttpServer::supervise(const ServeHooks& hooks) {
  // Signals are taken synchronously here; workers get the default mask back after fork.
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, &old);
  const pid_t root = ::getpid();

  auto spawn = [&](int worker) -> pid_t {
    pid_t pid = ::fork();
    if (pid == 0) {
      sigprocmask(SIG_SETMASK, &old, nullptr);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != root) ::_exit(1);
      int rc = serve(hooks, worker);
      std::fflush(nullptr);
      ::_exit(rc);
    }
    if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
    return pid;
  };

  auto close_listener = [&] {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = -1;
  };

  std::map<pid_t, int> workers;  // pid -> worker index
  for (int i = 0; i < options_.num_workers; ++i) workers[spawn(i)] = i;
  spdlog::info("started {} workers", options_.num_workers);

  std::deque<std::chrono::steady_clock::time_point> deaths;
  int exit_code = 0;
  bool stopping = false;
  auto stop_deadline = std::chrono::steady_clock::time_point::max();
  while (!workers.empty()) {
    timespec timeout{0, 200'000'000};
    int sig = ::sigtimedwait(&set, nullptr, &timeout);
    if ((sig == SIGINT || sig == SIGTERM) && !stopping) {
      stopping = true;
      close_listener();  // stop accepting: only the workers' copies remain, closed on their stop
      stop_deadline = std::chrono::steady_clock::now() + options_.worker_stop_grace;
      for (auto& [pid, idx] : workers) ::kill(pid, SIGTERM);
    }
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      auto it = workers.find(pid);
      if (it == workers.end()) continue;
      int idx = it->second;
      workers.erase(it);
      if (stopping) continue;
      auto now = std::chrono::steady_clock::now();
      deaths.push_back(now);
      while (!deaths.empty() && now - deaths.front() > std::chrono::seconds(60)) deaths.pop_front();
      if (deaths.size() > 5) {
        spdlog::error("workers died more than 5 times within 60 s; stopping");
        exit_code = 1;
        stopping = true;
        close_listener();
        stop_deadline = now + options_.worker_stop_grace;
        for (auto& [p, i] : workers) ::kill(p, SIGTERM);
        continue;
      }
      pid_t fresh = spawn(idx);
      workers[fresh] = idx;
      spdlog::warn("worker {} (pid {}) exited with status {}; restarted as pid {}", idx, pid,
                   status, fresh);
    }
    if (stopping && std::chrono::steady_clock::now() > stop_deadline) {
      for (auto& [p, i] : workers) ::kill(p, SIGKILL);
      stop_deadline = std::chrono::steady_clock::time_point::max();
    }
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  return exit_code;
}

}  // namespace gym::http
