#include "http/server.h"
#include "http/verb.h"

#include "core/termination_signals.h"
#include "http/server_metrics.h"
#include "http/session_cookie.h"
#include "telemetry/logs/log_bridge.h"
#include "telemetry/metrics/gym_metrics.h"
#include "telemetry/traces/tracer.h"

#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
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
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <list>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace gym::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

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
    bool busy;  // reading or handling a request: shutdown lets it finish
  };
  std::list<Conn> conns;
  std::size_t active_requests = 0;
  bool stopping = false;
  std::size_t buffered_body_bytes = 0;        // bodies held now (max_buffered_body_bytes)
  std::unique_ptr<ServerSeries> metrics;      // null: not instrumented (the head server)
  const telemetry::Tracer* tracer = nullptr;  // SERVER spans; null or `server` off: none

  Loop(asio::io_context& io, const Router& r, const ServerOptions& o, ServerStats& s, int fd)
      : io(io), router(r), opt(o), stats(s), acceptor(io) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    acceptor.assign(addr.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd);
    if (!o.session_cookie_name.empty())
      cookie.emplace(o.session_cookie_name, o.session_signing_key);
  }

  // Records the server metrics and SERVER spans from now on; null, disabled or the group off: none.
  void bind(const ServerInstrumentation& in) {
    if (in.metrics && in.metrics->enabled()) metrics = std::make_unique<ServerSeries>(*in.metrics);
    if (in.tracer && in.tracer->on(telemetry::SpanGroup::server)) tracer = in.tracer;
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

  // The session of a request: the id of a valid signed cookie, else a new one
  // (docs/reference/http-server.md#session-cookies).
  std::string session_for(std::string_view cookie_value) const {
    std::optional<std::string> id;
    if (!cookie_value.empty()) id = cookie->verify(cookie_value);
    return id ? std::move(*id) : new_uuid4();
  }

  // The same from a whole Cookie header (empty when there was none).
  std::string session_from_header(std::string_view cookie_header) const {
    std::string value;
    for (const auto& [name, v] : parse_cookie_header(cookie_header))
      if (name == cookie->name()) value = v;
    return session_for(value);
  }

  // Every response carries the session cookie of its request, rejections too.
  void add_session_cookie(std::vector<Header>& headers, const std::string& session_id) const {
    headers.push_back({"Set-Cookie", cookie->set_cookie_header(session_id)});
  }

  void request_started() {
    ++active_requests;
    ++stats.requests;
  }

  void request_finished() {
    --active_requests;
    if (stopping && active_requests == 0) io.stop();
  }
};

namespace {
using Loop = HttpServer::Loop;
using RequestParser = bhttp::request_parser<bhttp::string_body>;

// One connection: its stream, the read buffer kept across its requests, and its entry in the
// loop's registry. close() unregisters it; a connection cut off by the loop's destruction is
// not unregistered (the loop is gone by then), hence no destructor.
struct Session {
  Session(Loop& l, tcp::socket socket) : loop(l), stream(std::move(socket)) {
    entry = loop.conns.insert(loop.conns.end(), Loop::Conn{&stream, false});
    ++loop.stats.connections_open;
    loop.stats.max_connections_open =
        std::max(loop.stats.max_connections_open, loop.stats.connections_open);
  }

  // At the end: the send side shut down, errors ignored.
  void close() {
    boost::system::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream.socket().close(ec);
    loop.conns.erase(entry);
    --loop.stats.connections_open;
  }

  // Counts `bytes` of the current request's body against the process's budget; false when
  // that would pass it.
  bool hold_body(std::size_t bytes) {
    if (bytes <= held) return true;
    const std::size_t more = bytes - held;
    if (loop.buffered_body_bytes + more > loop.opt.max_buffered_body_bytes) return false;
    loop.buffered_body_bytes += more;
    held = bytes;
    return true;
  }
  void release_body() {
    loop.buffered_body_bytes -= held;
    held = 0;
  }

  Loop& loop;
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  std::list<Loop::Conn>::iterator entry;
  std::size_t held = 0;  // body bytes of the current request counted in the loop's budget
};

// The route template a request head would be dispatched to; empty when none matches.
std::string_view route_of(const Loop& loop, const bhttp::request_header<>& head) {
  auto match = loop.router.match(to_method(head.method()), routing_path(head.target()));
  return match.handler ? match.route : std::string_view();
}

// Writes a small error response and closes, draining what the client still sends for a
// moment so the response is not lost to a TCP reset (a "lingering close").
// `cookie_header` is the request's Cookie header when its head was parsed; `metrics` times the
// request when its head was (the sample ends when the response is written, before the drain).
asio::awaitable<void> reject_and_close(Session& s, int status, Response res,
                                       std::string_view cookie_header = {},
                                       const RequestMetrics* metrics = nullptr,
                                       std::string_view route = {}) {
  if (s.loop.cookie)
    s.loop.add_session_cookie(res.headers, s.loop.session_from_header(cookie_header));
  bhttp::response<bhttp::string_body> out{static_cast<bhttp::status>(status), 11};
  out.set(bhttp::field::content_type, res.content_type);
  for (const auto& h : res.headers) out.insert(h.name, h.value);
  out.set(bhttp::field::connection, "close");
  out.body() = res.body;
  out.prepare_payload();
  s.stream.expires_after(std::chrono::seconds(5));
  auto [ec, n] = co_await bhttp::async_write(s.stream, out, kTuple);
  (void)n;
  if (ec) co_return;
  if (metrics) metrics->responded(route, status);
  boost::system::error_code sec;
  s.stream.socket().shutdown(tcp::socket::shutdown_send, sec);
  std::array<char, 16384> sink;
  s.stream.expires_after(std::chrono::seconds(1));
  for (std::size_t drained = 0; drained < (8u << 20);) {
    auto [rec, got] = co_await s.stream.async_read_some(asio::buffer(sink), kTuple);
    if (rec) break;
    drained += got;
  }
}

// 413: the body is over max_body_bytes (its Content-Length said so, or it grew past it).
asio::awaitable<void> reject_too_large(Session& s, const RequestParser& parser,
                                       const RequestMetrics& metrics) {
  const auto limit = s.loop.opt.max_body_bytes;
  co_await reject_and_close(
      s, 413,
      Response::detail(413, boost::json::string("Request body too large (limit " +
                                                std::to_string(limit) + " bytes)")),
      parser.get()[bhttp::field::cookie], &metrics, route_of(s.loop, parser.get()));
}

asio::awaitable<void> reject_busy(Session& s, const RequestParser& parser,
                                  const RequestMetrics& metrics) {
  co_await reject_and_close(
      s, 503,
      Response::detail(503, boost::json::string("Server busy: request bodies of " +
                                                std::to_string(s.loop.buffered_body_bytes) +
                                                " bytes are being held, and this one would pass "
                                                "http_max_buffered_body_bytes (" +
                                                std::to_string(s.loop.opt.max_buffered_body_bytes) +
                                                "); retry later")),
      parser.get()[bhttp::field::cookie], &metrics, route_of(s.loop, parser.get()));
}

// A head we read but will not serve: HTTP/1.1 without Host (RFC 9112 section 3.2: 400), or a
// transfer coding other than chunked (its body would otherwise be taken as empty: 501).
std::optional<std::pair<int, std::string>> unreadable_head(
    const bhttp::request<bhttp::string_body>& head) {
  if (head.version() >= 11 && head.find(bhttp::field::host) == head.end())
    return std::pair{400,
                     std::string("Invalid HTTP request: an HTTP/1.1 request needs a Host header")};
  const auto coding = head[bhttp::field::transfer_encoding];
  if (!coding.empty() && !beast::iequals(coding, "chunked"))
    return std::pair{501, "Transfer-Encoding '" + std::string(coding) +
                              "' is not supported: send the body uncompressed, with Content-Length "
                              "or Transfer-Encoding: chunked"};
  return std::nullopt;
}

// A request head that could not be read: 431 (too large), 413 (the head announced a body over
// the limit), nothing when the client went away or timed out, else 400.
asio::awaitable<void> reject_head(Session& s, const RequestParser& parser,
                                  const boost::system::error_code& ec) {
  if (ec == bhttp::error::header_limit) {
    co_await reject_and_close(s, 431, Response::detail(431, "Request header fields too large"));
  } else if (ec == bhttp::error::body_limit) {  // the head arrived; its Content-Length is too big
    RequestMetrics metrics(s.loop.metrics.get(), parser.get());
    co_await reject_too_large(s, parser, metrics);
  } else if (ec == beast::error::timeout || ec == bhttp::error::end_of_stream ||
             ec == asio::error::eof || ec == asio::error::operation_aborted ||
             ec == asio::error::connection_reset || ec == asio::error::bad_descriptor) {
    co_return;
  } else {
    co_await reject_and_close(
        s, 400,
        Response::detail(400, boost::json::string("Invalid HTTP request: " + ec.message())));
  }
}

// Reads the next request into `parser`: waits for its first byte (keep-alive idle timeout),
// then reads its head and body (each read within read_timeout). Answers a request it cannot
// read (431, 413, 400). `metrics` starts once the head is in. Returns false when the connection
// is to close.
asio::awaitable<bool> read_request(Session& s, RequestParser& parser,
                                   std::optional<RequestMetrics>& metrics) {
  const ServerOptions& opt = s.loop.opt;
  s.entry->busy = false;
  if (s.buffer.size() == 0) {
    // Idle keep-alive wait: the read timeout starts with the first byte of the next request.
    s.stream.expires_after(opt.keep_alive_idle);
    auto [ec, n] = co_await s.stream.async_read_some(s.buffer.prepare(8192), kTuple);
    if (ec) co_return false;
    s.buffer.commit(n);
  }
  s.entry->busy = true;
  parser.header_limit(static_cast<std::uint32_t>(opt.max_header_bytes));
  parser.body_limit(opt.max_body_bytes);
  // The whole request has one deadline; each read also has its own.
  const auto deadline = std::chrono::steady_clock::now() + opt.body_timeout;
  auto expire = [&] {
    s.stream.expires_at(std::min(deadline, std::chrono::steady_clock::now() + opt.read_timeout));
  };
  expire();
  auto [hec, hn] = co_await bhttp::async_read_header(s.stream, s.buffer, parser, kTuple);
  (void)hn;
  if (hec) {
    co_await reject_head(s, parser, hec);
    co_return false;
  }
  metrics.emplace(s.loop.metrics.get(), parser.get());
  if (auto problem = unreadable_head(parser.get())) {
    co_await reject_and_close(
        s, problem->first, Response::detail(problem->first, boost::json::string(problem->second)),
        parser.get()[bhttp::field::cookie], &*metrics, route_of(s.loop, parser.get()));
    co_return false;
  }
  // A declared length is counted before its body is read: a server that cannot hold it says so
  // at once instead of receiving it.
  if (!s.hold_body(parser.content_length().value_or(0))) {
    co_await reject_busy(s, parser, *metrics);
    co_return false;
  }
  if (auto expect = parser.get()[bhttp::field::expect]; beast::iequals(expect, "100-continue")) {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    auto [cec, cn] = co_await asio::async_write(s.stream, asio::buffer(kContinue), kTuple);
    (void)cn;
    if (cec) co_return false;
  }
  while (!parser.is_done()) {
    // A body must keep making progress, and all of it must arrive before the deadline.
    expire();
    auto [bec, bn] = co_await bhttp::async_read_some(s.stream, s.buffer, parser, kTuple);
    (void)bn;
    if (bec == bhttp::error::body_limit) co_await reject_too_large(s, parser, *metrics);
    // A body that breaks HTTP's framing (a bad chunk size) gets the 400 a bad head gets.
    if (bec && bec.category() == bhttp::make_error_code(bhttp::error::bad_chunk).category() &&
        bec != bhttp::error::body_limit && bec != bhttp::error::partial_message &&
        bec != bhttp::error::end_of_stream)
      co_await reject_and_close(
          s, 400,
          Response::detail(400, boost::json::string("Invalid HTTP request body: " + bec.message())),
          parser.get()[bhttp::field::cookie], &*metrics, route_of(s.loop, parser.get()));
    if (bec) co_return false;
    if (!s.hold_body(parser.get().body().size())) {  // a chunked body grows as it arrives
      co_await reject_busy(s, parser, *metrics);
      co_return false;
    }
  }
  s.stream.expires_never();
  co_return true;
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

// With the `server` group on, the caller's trace context (traceparent, tracestate, baggage) is
// extracted and the request runs under a SERVER span named "<METHOD> <route>" ("<METHOD>" when no
// route matched); the handler's context is that span's.
telemetry::Span server_span(const Loop& loop, Request& req) {
  req.trace.rollout_id = std::string(rollout_id_of(req.target));
  if (!loop.tracer) return {};
  TraceHeaders in;
  find_trace_headers(req.headers, in);
  telemetry::SpanContext parent;
  if (auto extracted = telemetry::parse_traceparent(in.traceparent)) {
    parent = std::move(*extracted);
    if (telemetry::acceptable_tracestate(in.tracestate))
      parent.trace_state = std::string(in.tracestate);
  }
  if (telemetry::acceptable_baggage(in.baggage)) req.trace.baggage = std::string(in.baggage);
  const std::string_view method = to_string(req.method);
  std::string name;
  name.reserve(method.size() + 1 + req.route.size());
  name += method;
  if (!req.route.empty()) (name += ' ') += req.route;
  telemetry::Span span = loop.tracer->start(std::move(name), telemetry::SpanKind::server, parent);
  if (span.recording()) {
    span.set_attribute("http.request.method", method);
    if (!req.route.empty()) span.set_attribute("http.route", req.route);
    span.set_attribute("url.path", std::string_view(req.target).substr(0, req.target.find('?')));
    span.set_attribute("url.scheme", "http");
  }
  span.enter(req.trace);
  return span;
}

// The status of the response on its SERVER span; 5xx is an error (OTel semantic conventions).
void end_server_span(telemetry::Span& span, int status) {
  if (!span.recording()) return;
  span.set_attribute("http.response.status_code", status);
  // A handler's exception already set ERROR with its message (record_exception): kept.
  if (status >= 500 && !span.failed()) span.set_status(telemetry::StatusCode::error);
  span.end();
}

// Handles one request: its session, then its route's handler (no I/O of the connection; an
// exception becomes a 500), or 404/405. The request counts as active until request_finished().
// `span`: the request's SERVER span, started once the route is known.
asio::awaitable<Response> handle(Loop& loop, Request& req, telemetry::Span& span) {
  loop.request_started();
  if (loop.cookie) req.session_id = loop.session_for(req.cookie(loop.cookie->name()));
  Response res;
  auto match = loop.router.match(req.method, req.path);
  req.route = match.handler ? match.route : std::string_view();  // none for 404 and 405
  span = server_span(loop, req);
  if (match.handler) {
    try {
      res = co_await (*match.handler)(req);
    } catch (const std::exception& e) {
      const telemetry::ScopedLogTrace in_span(req.trace.span);  // an OTLP log record's ids
      spdlog::error("{} {}: handler failed: {}", to_string(req.method), req.path, e.what());
      span.record_exception(exception_type(e), e.what());
      res = exception_response(e);
    } catch (...) {
      res = Response::json(boost::json::string("UnknownError: non-standard exception"), 500);
    }
  } else if (match.method_not_allowed) {
    res = Response::detail(405, "Method Not Allowed");
  } else {
    res = Response::detail(404, "Not Found");
  }
  if (loop.cookie) loop.add_session_cookie(res.headers, req.session_id);
  co_return res;
}

// Watches a connection while its request is handled: when the client closes it (it gave up, or
// was interrupted), the connection's coroutine is cancelled, and with it the handler's pending
// calls (their connections close; each server behind them does the same in turn; vLLM aborts a
// generation whose client left). A plain callback on the reactor's readiness wait, so a quiet
// client costs no system call and no coroutine.
struct ClientWatch {
  asio::cancellation_signal cancel;  // bound to the connection's coroutine
  bool watching = false;
  bool gone = false;
};

void watch_client(const std::shared_ptr<ClientWatch>& watch, tcp::socket& socket) {
  watch->watching = true;
  socket.async_wait(tcp::socket::wait_read, [watch, &socket](boost::system::error_code ec) {
    if (!watch->watching) return;  // the handler finished first; the socket may be gone
    if (!ec) {
      char byte;
      const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        watch_client(watch, socket);  // not readable after all
        return;
      }
      if (n > 0) {  // a pipelined request: the client is still there
        watch->watching = false;
        return;
      }
    }
    watch->watching = false;  // EOF, reset or a socket error: nobody waits for the answer
    watch->gone = true;
    watch->cancel.emit(asio::cancellation_type::terminal);
  });
}

// The end of the watch once the handler returned.
void stop_watching(ClientWatch& watch, tcp::socket& socket) {
  if (!watch.watching) return;
  watch.watching = false;
  boost::system::error_code ec;
  socket.cancel(ec);  // the only operation pending on it is the watch
}

// Writes the response, keep-alive when the request asked for it and the server is not
// stopping, and ends the request: its duration sample once written, the access log (carrying
// the ids of `server_span`, the request's SERVER span). Returns whether the connection stays open
// for the next request.
asio::awaitable<bool> write_response(Session& s, const Request& req, Response& res, bool keep_alive,
                                     const RequestMetrics& metrics,
                                     const telemetry::SpanContext& server_span) {
  bhttp::response<bhttp::string_body> out{static_cast<bhttp::status>(res.status), 11};
  out.set(bhttp::field::content_type, res.content_type);
  for (auto& h : res.headers) out.insert(h.name, h.value);
  out.body() = std::move(res.body);
  keep_alive = keep_alive && !s.loop.stopping;
  out.keep_alive(keep_alive);
  out.prepare_payload();
  s.stream.expires_after(s.loop.opt.keep_alive_idle);  // a client that stops reading cannot pin us
  auto [ec, n] = co_await bhttp::async_write(s.stream, out, kTuple);
  (void)n;
  if (!ec) metrics.responded(req.route, res.status);
  s.loop.request_finished();
  if (s.loop.opt.access_log) {
    const telemetry::ScopedLogTrace in_span(server_span);  // no co_await while it lives
    spdlog::info("{} {} {}", to_string(req.method), req.target, res.status);
  }
  co_return !ec && keep_alive;
}

// One connection: read a request, handle it, write the response, until the client or the server
// ends it.
asio::awaitable<void> connection(Loop& loop, tcp::socket socket,
                                 std::shared_ptr<ClientWatch> watch) {
  Session s(loop, std::move(socket));
  while (!loop.stopping) {
    RequestParser parser;                   // a fresh parser per request
    std::optional<RequestMetrics> metrics;  // from the head to the end of the response
    if (!co_await read_request(s, parser, metrics)) break;
    const bool keep_alive = parser.get().keep_alive();
    Request req = to_request(parser.release());
    telemetry::Span span;
    watch_client(watch, s.stream.socket());
    Response res = co_await handle(loop, req, span);
    stop_watching(*watch, s.stream.socket());
    s.release_body();   // the handler is done with it
    if (watch->gone) {  // the client left: its request ends unanswered, the connection with it
      loop.request_finished();
      if (span.recording()) {
        span.set_attribute("error.type", "client_closed_request");
        span.set_status(telemetry::StatusCode::error);
        span.end();
      }
      break;
    }
    const int status = res.status;
    const bool more = co_await write_response(s, req, res, keep_alive, *metrics, span.context());
    end_server_span(span, status);
    if (!more) break;
  }
  s.release_body();
  s.close();
}

void start_connection(Loop& loop, tcp::socket socket) {
  boost::system::error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  ++loop.stats.connections_accepted;
  auto watch = std::make_shared<ClientWatch>();
  auto slot = watch->cancel.slot();
  asio::co_spawn(loop.io, connection(loop, std::move(socket), watch),
                 asio::bind_cancellation_slot(slot, [watch](std::exception_ptr e) {
                   if (!e) return;
                   try {
                     std::rethrow_exception(e);
                   } catch (const std::exception& ex) {
                     spdlog::error("connection task failed: {}", ex.what());
                   }
                 }));
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
    : router_(std::move(router)), options_(std::move(options)) {
  // Chosen before any worker is forked, so all of them sign with the same key.
  if (!options_.session_cookie_name.empty() && options_.session_signing_key.empty())
    options_.session_signing_key = process_session_key();
}

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
  if (listen_fd_ < 0) {
    listen_fd_ = listen_on(options_.host, options_.port);
    port_ = bound_port(listen_fd_);
  }
  return port_;
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
    asio::signal_set signals(io);
    for (int sig : core::kTerminationSignals) signals.add(sig);
    signals.async_wait([&](boost::system::error_code ec, int sig) {
      if (ec) return;
      spdlog::info("received signal {}, shutting down", sig);
      loop.begin_shutdown();
    });
    if (hooks.on_start) loop.bind(hooks.on_start(io, worker));
    asio::co_spawn(io, accept_loop(loop), asio::detached);
    io.run();
    if (hooks.on_stop) hooks.on_stop();
  }  // the loop's remaining coroutines (requests cut off at shutdown) are destroyed here
  if (hooks.on_exit) hooks.on_exit();
  return 0;
}

}  // namespace gym::http
