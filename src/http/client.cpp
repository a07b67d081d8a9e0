#include "http/client.h"

#include "http/router.h"
#include "telemetry/logs/log_bridge.h"
#include "telemetry/traces/tracer.h"

#include "core/json_text.h"
#include "core/secrets.h"
#include "http/client_connection.h"
#include "http/client_exchange.h"
#include "http/retry_policy.h"
#include "http/url.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <atomic>
#include <list>
#include <map>
#include <set>
#include <unordered_map>

namespace gym::http {
namespace asio = boost::asio;
namespace ssl = asio::ssl;
using Clock = std::chrono::steady_clock;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr int kMaxRedirects = 10;
constexpr std::chrono::seconds kRetryLogEvery{10};  // one retry summary per endpoint at most
constexpr std::size_t kBodyInHealth = 200;          // of a 5xx, in "unavailable (last: ...)"

namespace {

std::atomic<std::uint64_t> g_connection_errors{0};

// A redirect to follow: the next URL, and GET without a body where aiohttp switches to it.
bool follow_redirect(const ClientResponse& res, std::string& url, Method& method,
                     std::string& body) {
  const int st = res.status;
  if (st != 301 && st != 302 && st != 303 && st != 307 && st != 308) return false;
  auto location = find_header(res.headers, "location");
  if (location.empty()) return false;
  url = resolve_location(url, location);
  if (st == 303 || ((st == 301 || st == 302) && method == Method::post)) {
    method = Method::get;
    body.clear();
  }
  return true;
}

// `text` (an answer's body, an error) without the credentials `req` carries, however the peer
// escaped them when it echoed them back, nor those of any URL in it.
std::string without_credentials(std::string text, const ClientRequest& req) {
  const auto mask = [&](std::string_view secret) { text = core::masked_secret(text, secret); };
  for (const Header& h : req.headers) {
    if (!core::is_secret_header(h.name)) continue;
    mask(h.value);
    if (auto space = h.value.find(' '); space != std::string::npos)
      mask(std::string_view(h.value).substr(space + 1));  // the key of "Bearer <key>"
  }
  for (const auto& cookie : req.cookies) mask(cookie.second);
  return core::masked_urls_in(text);
}

}  // namespace

// The connection pool of one client: the idle connections of each destination, the slots of the
// ledger (limits and waiters), the idle sweep, and the request loop with its retries.
struct HttpClient::Pool : std::enable_shared_from_this<HttpClient::Pool> {
  struct Host;
  struct Conn;
  // Every connection has one owner at all times: the lease using it, or its host's idle list.
  // A coroutine destroyed mid-connect (its loop shut down) thus still closes its socket.
  using ConnPtr = std::unique_ptr<Conn>;
  // Counted open from construction (before its connect) to destruction.
  struct Conn : ClientConnection {
    Conn(Pool& p, Host& h) : ClientConnection(p.ex), pool(p), host(&h) {
      ++pool.open;
      ++pool.stats.connections_opened;
      pool.stats.max_open = std::max(pool.stats.max_open, pool.open);
    }
    ~Conn() {
      boost::system::error_code ec;
      stream.socket().close(ec);
      --pool.open;
    }
    Conn(const Conn&) = delete;
    Conn& operator=(const Conn&) = delete;
    Pool& pool;
    Host* host;
    Clock::time_point idle_since;
    std::list<ConnPtr>::iterator host_pos;  // in host->idle (most recent first)
    std::list<Conn*>::iterator lru_pos;     // in Pool::idle_lru (oldest first)
  };
  struct Host : Destination {
    std::size_t slot_id = 0;
    std::list<ConnPtr> idle;  // owns the idle connections
  };

  asio::any_io_executor ex;
  PoolParams params;
  PoolObserver* observer;
  const telemetry::Tracer* tracer;  // CLIENT spans; null: none
  SlotLedger ledger;
  ClientStats stats;
  std::unordered_map<std::string, std::unique_ptr<Host>> hosts;
  std::list<Conn*> idle_lru;
  std::size_t open = 0;  // open sockets: in use + idle
  asio::steady_timer sweeper;
  std::unique_ptr<ssl::context> tls_context;  // created with the first https host
  bool closed = false;
  std::set<std::string> cross_origin_logged;  // "from -> to" origins already warned about

  Pool(asio::any_io_executor e, PoolParams p, PoolObserver* o, const telemetry::Tracer* t)
      : ex(e),
        params(p),
        observer(o),
        tracer(t),
        ledger(p.total_limit, p.per_host_limit),
        sweeper(e) {}

  ~Pool() {
    while (!idle_lru.empty()) close_idle(idle_lru.front());
  }

  Host& host_for(const Url& u) {
    auto& slot = hosts[(u.tls ? "https://" : "") + u.host + ":" + u.port];
    if (!slot) {
      if (u.tls && !tls_context) tls_context = make_tls_context(params.tls);
      slot = std::make_unique<Host>();
      slot->tls = u.tls;
      slot->host = u.host;
      slot->port = u.port;
      slot->slot_id = ledger.add_host();
    }
    return *slot;
  }

  // --- idle connections ---

  void close_idle(Conn* c) {
    idle_lru.erase(c->lru_pos);
    c->host->idle.erase(c->host_pos);  // destroys it
  }

  void make_idle(ConnPtr c) {
    Conn* raw = c.get();
    raw->idle_since = Clock::now();
    raw->host_pos = raw->host->idle.insert(raw->host->idle.begin(), std::move(c));
    raw->lru_pos = idle_lru.insert(idle_lru.end(), raw);
    schedule_sweep();
  }

  // Newest idle connection of `h` that has not outlived the idle timeout.
  ConnPtr take_idle(Host& h) {
    expire_idle();
    if (h.idle.empty()) return nullptr;
    ConnPtr c = std::move(h.idle.front());
    h.idle.pop_front();
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

  // --- leases: a slot and a connection for one attempt ---

  // A slot of the ledger and a connection, borrowed for one attempt (an RAII handle that returns
  // itself). give_back() returns both after the exchange; a lease dropped without it (an error, the
  // loop's teardown) closes its connection and frees its slot.
  struct Lease {
    Pool& pool;
    Host& host;
    bool slot = false;
    ConnPtr conn;
    bool reused = false;  // an idle keep-alive connection

    Lease(Pool& p, Host& h) : pool(p), host(h) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { give_back(false); }

    // The connection back to the idle list when `keep_alive` and the pool is open, else closed;
    // then the slot.
    void give_back(bool keep_alive) {
      if (conn) {
        if (keep_alive && !pool.closed) {
          pool.make_idle(std::move(conn));
        } else {
          conn.reset();
        }
      }
      if (slot) pool.ledger.release(host.slot_id);
      slot = false;
    }
  };

  // A wait for a slot. An unfinished wait leaves the queue however the coroutine ends, and a
  // wait cut off by the coroutine's destruction (its loop shut down) still counts as abandoned.
  struct Wait {
    Pool& pool;
    const std::string& destination;
    std::size_t host;
    SlotLedger::Waiter w{};
    QueueConstraint why = QueueConstraint::unknown;
    Clock::time_point start{};
    bool waiting = false;
    bool keep = false;  // granted, and the slot now belongs to the lease
    void finish(QueueOutcome outcome) {
      waiting = false;
      if (pool.observer)
        pool.observer->wait_finished(destination, why, outcome, Clock::now() - start);
    }
    ~Wait() {
      if (waiting) finish(QueueOutcome::abandoned);
      if (w.granted && !keep) pool.ledger.release(host);
      pool.ledger.cancel(w);
    }
  };

  // The common case, without suspending (no coroutine frame): a slot free at once, and an idle
  // connection of the lease's host. Every call is one acquisition.
  void try_lease(Lease& lease, const std::string& destination) {
    ++stats.acquisitions;
    if (observer) observer->acquisition_started(destination);
    if (!ledger.try_acquire(lease.host.slot_id)) return;
    lease.slot = true;
    stats.max_in_use = std::max(stats.max_in_use, ledger.in_use());
    reuse_idle(lease);
  }

  // What try_lease() could not do: wait for the slot, then take an idle connection or open one.
  // Returns false, with `error`, when the lease got neither. (Keep its one early co_return: GCC 12
  // miscompiled a version that also returned early after reuse_idle(), resuming it at a bad
  // suspension point.)
  asio::awaitable<bool> complete_lease(Lease& lease, const ClientRequest& req,
                                       std::optional<Clock::time_point> deadline,
                                       TransportError& error) {
    if (!lease.slot) {
      const bool granted = co_await wait_for_slot(lease.host, req.destination, deadline);
      if (!granted) {
        error.message = "gave up waiting for a pooled connection";
        co_return false;
      }
      lease.slot = true;
      reuse_idle(lease);
    }
    if (!lease.conn) co_await open_connection(lease, req.timeout, error);
    co_return lease.conn != nullptr;
  }

  // The lease's connection from its host's idle ones, if any.
  void reuse_idle(Lease& lease) {
    lease.conn = take_idle(lease.host);
    lease.reused = lease.conn != nullptr;
    if (lease.reused) ++stats.connections_reused;
  }

  // Waits in the queue for a slot. Returns false when the wait ended without one (deadline,
  // cancellation).
  asio::awaitable<bool> wait_for_slot(Host& h, const std::string& destination,
                                      std::optional<Clock::time_point> deadline) {
    ++stats.queued;
    asio::steady_timer timer(ex);
    timer.expires_at(deadline.value_or(Clock::time_point::max()));
    Wait wait{*this, destination, h.slot_id};
    wait.w.wake = [&timer] { timer.cancel(); };
    wait.start = Clock::now();
    wait.why = ledger.enqueue(wait.w, h.slot_id);
    wait.waiting = true;
    if (!wait.w.granted) co_await timer.async_wait(kTuple);
    wait.finish(wait.w.granted ? QueueOutcome::ok : QueueOutcome::abandoned);
    if (!wait.w.granted) {
      ++stats.abandoned;
      co_return false;
    }
    wait.keep = true;
    stats.max_in_use = std::max(stats.max_in_use, ledger.in_use());
    co_return true;
  }

  // A new connection for `lease`, owned by it from before its connect; none and `error` on
  // failure.
  asio::awaitable<void> open_connection(Lease& lease,
                                        std::optional<std::chrono::milliseconds> timeout,
                                        TransportError& error) {
    // The total limit is also a hard cap on sockets: drop the oldest idle one first.
    if (params.total_limit != 0 && open >= params.total_limit && !idle_lru.empty())
      close_idle(idle_lru.front());
    if (auto failed = co_await resolve(ex, lease.host)) {
      error = std::move(*failed);
      co_return;
    }
    lease.conn = std::make_unique<Conn>(*this, lease.host);
    if (auto failed =
            co_await connect(*lease.conn, lease.host, tls_context.get(), params, timeout)) {
      error = std::move(*failed);
      lease.conn.reset();
    }
  }

  // --- the request loop: redirects, retries, the budget ---

  // With the `http_client` group on, one CLIENT span "HTTP <METHOD>" covers the whole logical
  // request (pool waits, retries, redirects), and its traceparent (with the caller's tracestate and
  // baggage) goes out on every attempt (request_head writes them). Started here, not in a coroutine
  // wrapping request(): a request has one coroutine frame, traced or not. See
  // docs/design/telemetry-contract.md#spans-and-propagation.
  telemetry::Span client_span(ClientRequest& req) const {
    const std::string_view method = to_string(req.method);
    std::string name = "HTTP ";  // within the short-string buffer: no allocation
    name += method;
    telemetry::Span span =
        tracer->start(std::move(name), telemetry::SpanKind::client, req.trace.span);
    if (span.recording()) {
      span.set_attribute("http.request.method", method);
      span.set_attribute("url.full", span_url(req.url));
      if (!req.trace.rollout_id.empty())
        span.set_attribute("nemo.gym.rollout.id", req.trace.rollout_id);
    }
    if (req.started) *req.started = span.context();
    req.trace.span = span.context();  // what goes out, and what the attempts' log lines carry
    return span;
  }

  static void end_client_span(telemetry::Span& span, int status) {
    if (!span.recording()) return;
    span.set_attribute("http.response.status_code", status);
    if (status >= 400) span.set_status(telemetry::StatusCode::error);
  }

  // The decision after an answer that is no redirect to follow: done, or a retry. The endpoint's
  // health hears of it (EndpointUnavailableError when it gives up on the endpoint); request-debug
  // logging says a final failing answer.
  RetryDecision after_answer(ClientRequest& req, const ClientResponse& response,
                             RetryPolicy& policy, Method method, const std::string& url,
                             Clock::time_point now) {
    const int st = response.status;
    if (req.health) {
      if (st >= 500) {
        if (req.health->failed(
                "HTTP " + std::to_string(st) + ": " + response.body.substr(0, kBodyInHealth), now))
          throw EndpointUnavailableError(req.health->why_unavailable(now));
      } else {
        req.health->answered(now);
      }
    }
    const auto retry_after = find_header(response.headers, "retry-after");
    const RetryDecision d = policy.after_response(
        st, now,
        retry_after.empty() ? std::nullopt
                            : parse_retry_after(retry_after, std::chrono::system_clock::now()));
    if (d.action == RetryAction::done && params.request_debug && st >= 400) {
      const telemetry::ScopedLogTrace in_span(req.trace.span);
      spdlog::info("request {} {} failed with {}: {}", to_string(method), core::masked_url(url), st,
                   without_credentials(response.body, req));
    }
    return d;
  }

  // The decision after an attempt that got no answer: a retry, or the error that ends the request
  // (thrown). The endpoint's health hears of failures that say something about it.
  RetryDecision after_failure(ClientRequest& req, const TransportError& error, RetryPolicy& policy,
                              Method method, const std::string& url, Clock::time_point now) {
    if (params.request_debug) {
      const telemetry::ScopedLogTrace in_span(req.trace.span);
      spdlog::info("request {} {} failed: {}", to_string(method), core::masked_url(url),
                   without_credentials(error.message, req));
    }
    // A stale keep-alive connection says nothing about the endpoint, nor does a certificate it is
    // not trusted with, nor an answer too long to take.
    if (req.health && error.failure != AttemptFailure::stale &&
        error.failure != AttemptFailure::tls && error.failure != AttemptFailure::too_large &&
        req.health->failed(error.message, now))
      throw EndpointUnavailableError(req.health->why_unavailable(now));
    const RetryDecision d = policy.after_failure(error.failure, now);
    if (d.action == RetryAction::fail_tls) throw TlsError(error.message);
    if (d.action == RetryAction::fail_too_large) throw ResponseTooLargeError(error.message);
    if (d.action == RetryAction::fail) throw RequestError(error.message);
    if (d.reason == RetryReason::connection) note_connection_error(url, error.message);
    return d;
  }

  asio::awaitable<ClientResponse> request(ClientRequest req) {
    auto self = shared_from_this();  // keeps the pool alive while the request runs
    telemetry::Span span;
    if (tracer && tracer->on(telemetry::SpanGroup::http_client)) span = client_span(req);
    RetryPolicy policy(
        req.kind, req.retry,
        RetryPolicy::budget_deadline(Clock::now(), params.retry_budget_seconds, req.retry));
    std::string url = req.url;
    Method method = req.method;
    std::string body = std::move(req.body);  // a redirect may change it (303: GET, no body)
    int attempts = 0;
    try {
      for (int hops = 0;;) {
        std::string invalid;
        const std::optional<Url> u = parse_url(url, invalid);
        if (!u) throw RequestError(invalid);
        ++attempts;
        Exchange a;  // one attempt: a lease, then one exchange on its connection
        {
          Lease lease(*this, host_for(*u));
          try_lease(lease, req.destination);
          bool ready = lease.conn != nullptr;
          if (!ready) ready = co_await complete_lease(lease, req, policy.deadline(), a.error);
          if (ready) {
            a = co_await exchange(*lease.conn, *u, req, method, body, lease.reused,
                                  req.read_timeout.value_or(params.read_timeout),
                                  span.context().valid() ? &req.trace : nullptr);
            lease.give_back(a.response && a.keep_alive);
          }
        }  // the slot is free again before any wait for a retry
        RetryDecision d;
        std::string why;
        const auto now = Clock::now();
        if (a.response) {
          if (hops < kMaxRedirects) {
            const std::string from = url;
            if (follow_redirect(*a.response, url, method, body)) {
              if (!same_origin(from, url)) drop_credentials(req, from, url);
              ++hops;
              continue;
            }
          }
          d = after_answer(req, *a.response, policy, method, url, now);
          if (d.action == RetryAction::done) {
            end_client_span(span, a.response->status);
            co_return std::move(*a.response);
          }
          why = "HTTP " + std::to_string(a.response->status);
        } else {
          d = after_failure(req, a.error, policy, method, url, now);
          why = std::move(a.error.message);
        }
        if (d.action == RetryAction::budget_exhausted) {
          const std::string message =
              fmt::format("retry budget exhausted ({:g} s, {} attempts): {}",
                          params.retry_budget_seconds, attempts, why);
          if (!a.response) throw RequestError(message);
          if (span.recording())  // the final attempt's status
            span.set_attribute("http.response.status_code", a.response->status);
          throw RetryBudgetError(message, std::move(*a.response), params.retry_budget_seconds,
                                 attempts);
        }
        if (req.kind == CallKind::external && d.reason != RetryReason::stale_connection)
          note_retry(req, url, a.response ? a.response->status : 0, d.reason, now);
        ++stats.retries;
        if (d.action == RetryAction::retry_now) continue;
        asio::steady_timer t(ex, d.wait);
        co_await t.async_wait(kTuple);
      }
    } catch (const std::exception& e) {
      span.record_exception(exception_type(e), e.what());
      throw;
    }
  }

  // The retries of external calls, per endpoint, since its last summary line: a 429 storm
  // retries every call every 0.5 s, and a line per retry would bury everything else.
  struct RetryTally {
    std::map<int, std::uint64_t> statuses;  // retried answers by status
    std::uint64_t connection = 0;           // refused, reset or closed connections
    std::uint64_t transport = 0;            // other transport errors
    std::optional<Clock::time_point> logged;
  };
  std::unordered_map<std::string, RetryTally> retry_tallies;

  // Counts a retry of an external call and, at most once per kRetryLogEvery per endpoint, logs
  // what was retried since the last line.
  void note_retry(const ClientRequest& req, const std::string& url, int status, RetryReason reason,
                  Clock::time_point now) {
    // Named without the query string, which may hold a key.
    const std::string endpoint =
        core::masked_url(req.health ? req.health->name() : url.substr(0, url.find('?')));
    auto& t = retry_tallies[endpoint];
    if (status != 0) {
      ++t.statuses[status];
    } else if (reason == RetryReason::connection) {
      ++t.connection;
    } else {
      ++t.transport;
    }
    if (t.logged && now - *t.logged < kRetryLogEvery) return;
    std::string what;
    const auto add = [&](std::string part) { what += (what.empty() ? "" : ", ") + part; };
    for (const auto& [st, n] : t.statuses)
      add(st == 429
              ? fmt::format("{} {} rate limited (429)", n, n == 1 ? "attempt was" : "attempts were")
              : fmt::format("{} answered {}", n, st));
    if (t.connection)
      add(fmt::format("{} lost the connection (refused, reset or closed)", t.connection));
    if (t.transport) add(fmt::format("{} failed in transport", t.transport));
    const std::string window =
        t.logged ? fmt::format(" in the last {:.0f} s",
                               std::chrono::duration<double>(now - *t.logged).count())
                 : std::string();
    const std::string budget =
        params.retry_budget_seconds > 0
            ? fmt::format("retrying within global_http_retry_budget_seconds={:g} s",
                          params.retry_budget_seconds)
            : std::string("retrying without end (global_http_retry_budget_seconds=0)");
    const telemetry::ScopedLogTrace in_span(req.trace.span);
    spdlog::warn("model endpoint {}: {}{}; {}", endpoint, what, window, budget);
    t = RetryTally{};
    t.logged = now;
  }

  // Every 100th refused or dropped connection: most often the server is down, so the line names
  // the URL and the error first; a busy server out of file descriptors is the other cause.
  static void note_connection_error(const std::string& url, const std::string& error) {
    auto n = ++g_connection_errors;
    if (n % 100 == 0)
      spdlog::warn(
          "{} refused or dropped connections so far in this process, the last to {}: {}. Check "
          "that the server at that address is running; if it is, it may be out of file "
          "descriptors (raise `ulimit -n`) or need more replicas",
          n, core::masked_url(url), core::masked_urls_in(error));
  }

  // A redirect to another origin (scheme, host or port) goes on without the request's
  // credentials, as curl and aiohttp do: a key for the endpoint is not sent to wherever it points
  // (curl's CVE-2022-27774). Warned about once per pair of origins, never naming the key.
  void drop_credentials(ClientRequest& req, const std::string& from, const std::string& to) {
    std::string dropped;
    std::erase_if(req.headers, [&](const Header& h) {
      if (!core::is_secret_header(h.name)) return false;
      dropped += (dropped.empty() ? "" : ", ") + h.name;
      return true;
    });
    if (!req.cookies.empty()) dropped += dropped.empty() ? "Cookie" : ", Cookie";
    req.cookies.clear();
    if (dropped.empty()) return;
    const std::string hop = origin_of(from) + " -> " + origin_of(to);
    if (!cross_origin_logged.insert(hop).second) return;
    const telemetry::ScopedLogTrace in_span(req.trace.span);
    spdlog::warn("redirect {} leaves the origin: followed without the request's credentials ({})",
                 hop, dropped);
  }
};

HttpClient::HttpClient(asio::any_io_executor executor, PoolParams params, PoolObserver* observer,
                       const telemetry::Tracer* tracer)
    : pool_(std::make_shared<Pool>(std::move(executor), params, observer, tracer)) {}

HttpClient::~HttpClient() {
  pool_->closed = true;
  pool_->sweeper.cancel();
}

// Not coroutines themselves: the pool's request keeps the pool alive while it runs.
asio::awaitable<ClientResponse> HttpClient::request(ClientRequest req) {
  return pool_->request(std::move(req));
}

asio::awaitable<ClientResponse> HttpClient::post_json(std::string url,
                                                      const boost::json::value& body,
                                                      Cookies cookies, std::string destination) {
  ClientRequest req;
  req.url = std::move(url);
  req.body = core::render_json(body);
  req.cookies = std::move(cookies);
  req.destination = std::move(destination);
  return pool_->request(std::move(req));
}

const ClientStats& HttpClient::stats() const { return pool_->stats; }
const PoolParams& HttpClient::params() const { return pool_->params; }
std::size_t HttpClient::in_use() const { return pool_->ledger.in_use(); }
std::size_t HttpClient::open_connections() const { return pool_->open; }

bool HttpClient::traced() const {
  return pool_->tracer && pool_->tracer->on(telemetry::SpanGroup::http_client);
}

}  // namespace gym::http
