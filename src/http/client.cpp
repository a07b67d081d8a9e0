#include "http/client.h"

#include "core/json_text.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/json.hpp>
#include <boost/url/parse.hpp>
#include <spdlog/spdlog.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <list>
#include <unordered_map>

namespace gym::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr auto kRetrySleep = std::chrono::milliseconds(500);
constexpr int kMaxRedirects = 10;
constexpr int kExternalMaxTries = 3;

boost::json::value ClientResponse::json(boost::json::storage_ptr storage) const {
  boost::system::error_code ec;
  auto v = core::parse_json(body, ec, nullptr, std::move(storage));
  if (ec) throw std::runtime_error("response is not valid JSON: " + ec.message());
  return v;
}

namespace {

struct Url {
  bool tls = false;  // https
  std::string host;
  std::string port;
  std::string target;  // path + query
};

Url parse_url(const std::string& text) {
  auto r = boost::urls::parse_uri(text);
  if (!r) throw RequestError("invalid URL '" + text + "': " + r.error().message());
  Url u;
  if (r->scheme() == "https") {
    u.tls = true;
  } else if (r->scheme() != "http") {
    throw RequestError("unsupported URL scheme in '" + text +
                       "': only http:// and https:// are supported");
  }
  u.host = r->host_address();
  if (u.host.empty()) throw RequestError("URL '" + text + "' has no host");
  u.port = r->has_port() ? std::string(r->port()) : u.tls ? "443" : "80";
  u.target = r->encoded_path().empty() ? "/" : std::string(r->encoded_path());
  if (r->has_query()) u.target += "?" + std::string(r->encoded_query());
  return u;
}

// Resolves a Location header against the URL it came from.
std::string resolve_location(const Url& base, std::string_view location) {
  if (location.starts_with("http://") || location.starts_with("https://"))
    return std::string(location);
  std::string prefix = (base.tls ? "https://" : "http://") + base.host + ":" + base.port;
  if (location.starts_with("/")) return prefix + std::string(location);
  auto path = base.target.substr(0, base.target.find('?'));
  return prefix + path.substr(0, path.rfind('/') + 1) + std::string(location);
}

bhttp::verb to_verb(Method m) {
  switch (m) {
    case Method::get: return bhttp::verb::get;
    case Method::head: return bhttp::verb::head;
    case Method::post: return bhttp::verb::post;
    case Method::put: return bhttp::verb::put;
    case Method::patch: return bhttp::verb::patch;
    case Method::del: return bhttp::verb::delete_;
    case Method::options: return bhttp::verb::options;
    case Method::other: break;
  }
  return bhttp::verb::unknown;
}

// How a failed attempt may be retried (runtime.md 8.3).
enum class Failure {
  refused_or_closed,  // refused, reset, closed before a response: retried for every call
  stale,              // a reused keep-alive connection closed under us: retried at once
  tls,                // TLS handshake refused (certificate, host name, protocol): never retried
  other,              // other transport errors
};

bool closed_before_response(const boost::system::error_code& ec) {
  return ec == asio::error::connection_refused || ec == asio::error::connection_reset ||
         ec == asio::error::eof || ec == bhttp::error::end_of_stream ||
         ec == asio::error::broken_pipe || ec == asio::error::connection_aborted ||
         ec == ssl::error::stream_truncated;  // a TLS peer that closed without close_notify
}

bool is_ip_address(const std::string& host) {
  boost::system::error_code ec;
  (void)asio::ip::make_address(host, ec);
  return !ec;
}

// The client side of TLS (telemetry.md 7.2): TLS 1.2 or newer, the peer's certificate verified
// against the system trust store (OpenSSL's default paths, so SSL_CERT_FILE and SSL_CERT_DIR
// work as in any OpenSSL program).
std::unique_ptr<ssl::context> make_tls_context() {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  ctx->set_verify_mode(ssl::verify_peer);
  boost::system::error_code ec;
  ctx->set_default_verify_paths(ec);
  if (ec) spdlog::warn("TLS: cannot load the system trust store: {}", ec.message());
  return ctx;
}

// Why a handshake failed: the certificate verification result when verification failed (the
// OpenSSL reason: "unable to get local issuer certificate", "hostname mismatch", ...), else the
// TLS error itself.
std::string handshake_error(SSL* ssl_handle, const boost::system::error_code& ec) {
  std::string why = ec.message();
  const long verify = SSL_get_verify_result(ssl_handle);
  if (verify != X509_V_OK) {
    why += std::string(": ") + X509_verify_cert_error_string(verify);
  }
  return why;
}

std::atomic<std::uint64_t> g_connection_errors{0};

}  // namespace

struct HttpClient::Pool : std::enable_shared_from_this<HttpClient::Pool> {
  struct Host;
  struct Conn {
    // A response of a few KB then arrives in one read (an empty flat_buffer reads 512 bytes at
    // a time while it grows).
    explicit Conn(asio::any_io_executor ex) : stream(std::move(ex)) { buffer.reserve(8192); }
    beast::tcp_stream stream;
    // https only: TLS over `stream` (declared after it, so destroyed first). Empty for http,
    // whose connections pay nothing for TLS.
    std::optional<beast::ssl_stream<beast::tcp_stream&>> tls;
    beast::flat_buffer buffer;
    Host* host = nullptr;
    Clock::time_point idle_since;
    std::list<Conn*>::iterator host_pos;  // in host->idle (most recent first)
    std::list<Conn*>::iterator lru_pos;   // in Pool::idle_lru (oldest first)
  };
  struct Host {
    bool tls = false;
    std::string host, port;
    std::size_t slot_id = 0;
    std::list<Conn*> idle;
    std::optional<tcp::resolver::results_type> endpoints;
  };

  asio::any_io_executor ex;
  PoolParams params;
  PoolObserver* observer;
  SlotLedger ledger;
  ClientStats stats;
  std::unordered_map<std::string, std::unique_ptr<Host>> hosts;
  std::list<Conn*> idle_lru;
  std::size_t open = 0;  // open sockets: in use + idle
  asio::steady_timer sweeper;
  std::unique_ptr<ssl::context> tls_context;  // created with the first https host
  bool closed = false;

  Pool(asio::any_io_executor e, PoolParams p, PoolObserver* o)
      : ex(e), params(p), observer(o), ledger(p.total_limit, p.per_host_limit), sweeper(e) {}

  ~Pool() {
    while (!idle_lru.empty()) close_idle(idle_lru.front());
  }

  Host& host_for(const Url& u) {
    auto& slot = hosts[(u.tls ? "https://" : "") + u.host + ":" + u.port];
    if (!slot) {
      if (u.tls && !tls_context) tls_context = make_tls_context();
      slot = std::make_unique<Host>();
      slot->tls = u.tls;
      slot->host = u.host;
      slot->port = u.port;
      slot->slot_id = ledger.add_host();
    }
    return *slot;
  }

  void close_idle(Conn* c) {
    c->host->idle.erase(c->host_pos);
    idle_lru.erase(c->lru_pos);
    destroy(c);
  }

  void destroy(Conn* c) {
    boost::system::error_code ec;
    c->stream.socket().close(ec);
    --open;
    delete c;
  }

  void make_idle(Conn* c) {
    c->idle_since = Clock::now();
    c->host_pos = c->host->idle.insert(c->host->idle.begin(), c);
    c->lru_pos = idle_lru.insert(idle_lru.end(), c);
    schedule_sweep();
  }

  // Newest idle connection of `h` that has not outlived the idle timeout.
  Conn* take_idle(Host& h) {
    expire_idle();
    if (h.idle.empty()) return nullptr;
    Conn* c = h.idle.front();
    h.idle.erase(c->host_pos);
    idle_lru.erase(c->lru_pos);
    return c;
  }

  void expire_idle() {
    auto limit = Clock::now() - params.idle_timeout;
    while (!idle_lru.empty() && idle_lru.front()->idle_since <= limit) close_idle(idle_lru.front());
  }

  void schedule_sweep() {
    if (closed || sweeper.expiry() > Clock::now()) return;
    sweeper.expires_after(params.idle_timeout);
    sweeper.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->closed) return;
      self->expire_idle();
      if (!self->idle_lru.empty()) self->schedule_sweep();
    });
  }

  void note_open() {
    ++open;
    ++stats.connections_opened;
    stats.max_open = std::max(stats.max_open, open);
  }

  void set_keepalive(tcp::socket& s) {
    int fd = s.native_handle();
    int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &params.tcp_keepalive_idle_seconds, sizeof(int));
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &params.tcp_keepalive_interval_seconds,
                 sizeof(int));
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &params.tcp_keepalive_probes, sizeof(int));
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  }

  // Holds one slot of the ledger; gives it back on every path out of an attempt.
  struct Slot {
    Pool* pool;
    std::size_t host;
    ~Slot() { pool->ledger.release(host); }
  };

  // Waits for a slot. Returns false when the wait ended without one (deadline, cancellation).
  asio::awaitable<bool> acquire(Host& h, const std::string& destination,
                                std::optional<Clock::time_point> deadline) {
    ++stats.acquisitions;
    if (observer) observer->acquisition_started(destination);
    if (ledger.try_acquire(h.slot_id)) {
      stats.max_in_use = std::max(stats.max_in_use, ledger.in_use());
      co_return true;
    }
    ++stats.queued;
    asio::steady_timer timer(ex);
    timer.expires_at(deadline.value_or(Clock::time_point::max()));
    // An unfinished wait leaves the queue however the coroutine ends, and a wait cut off by the
    // coroutine's destruction (its loop shut down) still counts as abandoned.
    struct Guard {
      Pool& pool;
      const std::string& destination;
      SlotLedger::Waiter w;
      std::size_t host;
      QueueConstraint why = QueueConstraint::unknown;
      Clock::time_point start{};
      bool waiting = false;
      bool keep = false;
      void finish(QueueOutcome outcome) {
        waiting = false;
        if (pool.observer)
          pool.observer->wait_finished(destination, why, outcome, Clock::now() - start);
      }
      ~Guard() {
        if (waiting) finish(QueueOutcome::abandoned);
        if (w.granted && !keep) pool.ledger.release(host);
        pool.ledger.cancel(w);
      }
    } guard{*this, destination, {}, h.slot_id, QueueConstraint::unknown, Clock::now()};
    guard.w.wake = [&timer] { timer.cancel(); };
    guard.start = Clock::now();
    guard.why = ledger.enqueue(guard.w, h.slot_id);
    guard.waiting = true;
    if (!guard.w.granted) co_await timer.async_wait(kTuple);
    guard.finish(guard.w.granted ? QueueOutcome::ok : QueueOutcome::abandoned);
    if (!guard.w.granted) {
      ++stats.abandoned;
      co_return false;
    }
    guard.keep = true;
    stats.max_in_use = std::max(stats.max_in_use, ledger.in_use());
    co_return true;
  }

  struct Attempt {
    std::optional<ClientResponse> response;
    Failure failure = Failure::other;
    std::string error;
  };

  // One attempt: acquire a slot and a connection, send, read. Never throws on I/O errors.
  asio::awaitable<Attempt> attempt(Host& h, const Url& u, const ClientRequest& req, Method method,
                                   const std::string& body,
                                   std::optional<Clock::time_point> deadline) {
    Attempt out;
    if (!co_await acquire(h, req.destination, deadline)) {
      out.error = "gave up waiting for a pooled connection";
      co_return out;
    }
    Slot slot{this, h.slot_id};
    auto self = shared_from_this();  // keeps the pool alive across suspensions

    Conn* c = take_idle(h);
    bool reused = c != nullptr;
    if (reused) {
      ++stats.connections_reused;
    } else {
      // The total limit is also a hard cap on sockets: drop the oldest idle one first.
      if (params.total_limit != 0 && open >= params.total_limit && !idle_lru.empty())
        close_idle(idle_lru.front());
      if (!h.endpoints) {
        tcp::resolver resolver(ex);
        auto [rec, results] = co_await resolver.async_resolve(h.host, h.port, kTuple);
        if (rec) {
          out.error = "cannot resolve " + h.host + ": " + rec.message();
          co_return out;
        }
        h.endpoints = results;
      }
      c = new Conn(ex);
      c->host = &h;
      note_open();
      if (req.timeout) c->stream.expires_after(*req.timeout);
      auto [cec, ep] = co_await c->stream.async_connect(*h.endpoints, kTuple);
      (void)ep;
      if (cec) {
        out.failure = closed_before_response(cec) ? Failure::refused_or_closed : Failure::other;
        out.error = "cannot connect to " + h.host + ":" + h.port + ": " + cec.message();
        destroy(c);
        co_return out;
      }
      set_keepalive(c->stream.socket());
      if (h.tls) {
        c->tls.emplace(c->stream, *tls_context);
        SSL* handle = c->tls->native_handle();
        // Host name (or IP address) verification by OpenSSL as part of the chain check, the
        // checks of ssl::host_name_verification; done this way a mismatch is reported as
        // "hostname mismatch" rather than an unspecified verification error.
        X509_VERIFY_PARAM* param = SSL_get0_param(handle);
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        if (is_ip_address(h.host)) {
          X509_VERIFY_PARAM_set1_ip_asc(param, h.host.c_str());
        } else {
          SSL_set_tlsext_host_name(handle, h.host.c_str());  // SNI: names only (RFC 6066)
          X509_VERIFY_PARAM_set1_host(param, h.host.c_str(), h.host.size());
        }
        auto [hec] = co_await c->tls->async_handshake(ssl::stream_base::client, kTuple);
        if (hec) {
          if (hec.category() == asio::error::get_ssl_category()) {
            out.failure = Failure::tls;
            out.error = "TLS handshake with " + h.host + ":" + h.port +
                        " failed: " + handshake_error(handle, hec);
          } else {
            out.failure = closed_before_response(hec) ? Failure::refused_or_closed
                                                      : Failure::other;
            out.error = "TLS handshake with " + h.host + ":" + h.port + " failed: " +
                        (hec == beast::error::timeout ? std::string("timed out") : hec.message());
          }
          destroy(c);
          co_return out;
        }
      }
    }

    bhttp::request<bhttp::string_body> out_req{to_verb(method), u.target, 11};
    out_req.set(bhttp::field::host, u.host + ":" + u.port);
    if (!body.empty()) out_req.set(bhttp::field::content_type, "application/json");
    for (const auto& hd : req.headers) out_req.set(hd.name, hd.value);
    if (!req.cookies.empty()) {
      std::string cookie;
      for (const auto& [k, v] : req.cookies) {
        if (!cookie.empty()) cookie += "; ";
        cookie += k + "=" + v;
      }
      out_req.set(bhttp::field::cookie, cookie);
    }
    out_req.body() = body;
    out_req.prepare_payload();

    if (req.timeout) {
      c->stream.expires_after(*req.timeout);
    } else {
      c->stream.expires_never();
    }
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(boost::none);
    parser.header_limit(1u << 20);
    if (method == Method::head) parser.skip(true);
    boost::system::error_code ec;
    // The same exchange over TLS or plain TCP: one branch, no indirection on the plain path.
    if (c->tls) {
      auto [wec, wn] = co_await bhttp::async_write(*c->tls, out_req, kTuple);
      (void)wn;
      ec = wec;
      if (!ec) {
        auto [rec, rn] = co_await bhttp::async_read(*c->tls, c->buffer, parser, kTuple);
        (void)rn;
        ec = rec;
      }
    } else {
      auto [wec, wn] = co_await bhttp::async_write(c->stream, out_req, kTuple);
      (void)wn;
      ec = wec;
      if (!ec) {
        auto [rec, rn] = co_await bhttp::async_read(c->stream, c->buffer, parser, kTuple);
        (void)rn;
        ec = rec;
      }
    }
    if (ec) {
      bool nothing_received = !parser.got_some();
      out.failure = reused && nothing_received && closed_before_response(ec) ? Failure::stale
                    : closed_before_response(ec)                             ? Failure::refused_or_closed
                                                                             : Failure::other;
      out.error = (ec == beast::error::timeout ? std::string("timed out") : ec.message()) +
                  " (" + to_string(method).data() + " " + req.url + ")";
      destroy(c);
      co_return out;
    }
    auto& res = parser.get();
    ClientResponse r;
    r.status = static_cast<int>(res.result_int());
    for (const auto& f : res) {
      r.headers.push_back({std::string(f.name_string()), std::string(f.value())});
      if (f.name() == bhttp::field::set_cookie) {
        auto v = f.value();
        auto pair = v.substr(0, v.find(';'));
        auto eq = pair.find('=');
        if (eq != std::string_view::npos)
          r.cookies.emplace_back(std::string(pair.substr(0, eq)), std::string(pair.substr(eq + 1)));
      }
    }
    bool keep = res.keep_alive() && !closed;
    r.body = std::move(res.body());
    c->stream.expires_never();
    if (keep) {
      make_idle(c);
    } else {
      destroy(c);
    }
    out.response = std::move(r);
    co_return out;
  }

  asio::awaitable<ClientResponse> request(ClientRequest req) {
    auto self = shared_from_this();
    const auto start = Clock::now();
    std::optional<Clock::time_point> deadline;
    if (params.retry_budget_seconds > 0 && req.retry)
      deadline = start + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(params.retry_budget_seconds));
    std::string url = req.url;
    Method method = req.method;
    std::string body = req.body;
    int counted_tries = 0;
    int attempts = 0;
    for (int hops = 0;;) {
      Url u = parse_url(url);
      Host& h = host_for(u);
      ++attempts;
      Attempt a = co_await attempt(h, u, req, method, body, deadline);
      bool retry = false;
      bool counted = false;
      std::string why;
      if (a.response) {
        int st = a.response->status;
        bool redirect = st == 301 || st == 302 || st == 303 || st == 307 || st == 308;
        auto location = find_header(a.response->headers, "location");
        if (redirect && !location.empty() && hops < kMaxRedirects) {
          ++hops;
          url = resolve_location(u, location);
          if (st == 303 || ((st == 301 || st == 302) && method == Method::post)) {
            method = Method::get;
            body.clear();
          }
          continue;
        }
        if (req.kind == CallKind::external && req.retry) {
          bool rate = st == 429 || st == 502 || st == 503 || st == 504 || st == 520;
          if (rate || st == 500) {
            counted = st == 500;
            retry = !counted || counted_tries + 1 < kExternalMaxTries;
            if (retry) {
              spdlog::warn("[model_retry url={} status={} kind={} try={} max_tries={}]", url, st,
                           st == 429 ? "rate_limit" : "server_error", counted_tries + 1,
                           kExternalMaxTries);
              why = "HTTP " + std::to_string(st);
            }
          }
        }
        if (!retry) {
          if (params.request_debug && st >= 400)
            spdlog::info("request {} {} failed with {}: {}", to_string(method), url, st,
                         a.response->body);
          co_return std::move(*a.response);
        }
      } else {
        why = a.error;
        if (params.request_debug)
          spdlog::info("request {} {} failed: {}", to_string(method), url, a.error);
        // A refused TLS handshake fails the same way on every try (runtime.md 8.3 retries
        // connection-level failures only); the caller sees why at once.
        if (a.failure == Failure::tls) throw TlsError(a.error);
        if (!req.retry) throw RequestError(a.error);
        if (a.failure == Failure::stale) {
          ++stats.retries;
          continue;  // a keep-alive connection the server had closed: try a fresh one now
        }
        if (a.failure == Failure::refused_or_closed) {
          auto n = ++g_connection_errors;
          if (n % 100 == 0)
            spdlog::warn("{} connection errors so far in this process; consider a higher file "
                         "descriptor limit or more server replicas",
                         n);
          retry = true;
        } else if (req.kind == CallKind::internal) {
          retry = true;
        } else {
          counted = true;
          retry = counted_tries + 1 < kExternalMaxTries;
        }
        if (!retry) throw RequestError(a.error);
      }
      if (counted) ++counted_tries;
      if (deadline && Clock::now() + kRetrySleep >= *deadline)
        throw RequestError("retry budget exhausted (" +
                           std::to_string(params.retry_budget_seconds) + " s, " +
                           std::to_string(attempts) + " attempts): " + why);
      ++stats.retries;
      asio::steady_timer t(ex, kRetrySleep);
      co_await t.async_wait(kTuple);
    }
  }
};

HttpClient::HttpClient(asio::any_io_executor executor, PoolParams params, PoolObserver* observer)
    : pool_(std::make_shared<Pool>(std::move(executor), params, observer)) {}

HttpClient::~HttpClient() {
  pool_->closed = true;
  pool_->sweeper.cancel();
}

asio::awaitable<ClientResponse> HttpClient::request(ClientRequest req) {
  auto pool = pool_;
  co_return co_await pool->request(std::move(req));
}

asio::awaitable<ClientResponse> HttpClient::post_json(std::string url,
                                                      const boost::json::value& body,
                                                      Cookies cookies, std::string destination) {
  ClientRequest req;
  req.url = std::move(url);
  req.body = core::render_json(body);
  req.cookies = std::move(cookies);
  req.destination = std::move(destination);
  auto pool = pool_;
  co_return co_await pool->request(std::move(req));
}

const ClientStats& HttpClient::stats() const { return pool_->stats; }
const PoolParams& HttpClient::params() const { return pool_->params; }
std::size_t HttpClient::in_use() const { return pool_->ledger.in_use(); }
std::size_t HttpClient::open_connections() const { return pool_->open; }

}  // namespace gym::http
