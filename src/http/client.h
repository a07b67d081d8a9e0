#pragma once
// The process's HTTP client: one bounded connection pool shared by every outbound call
// (docs/reference/http-client.md), over http:// or https:// (TLS 1.2+, peer certificate and host
// name verified against the system trust store; see TlsError). No cookie jar: callers pass cookies
// per request and read them from responses. Not thread-safe: create it on the event loop that will
// use it and call it only from there.
#include "http/endpoint_health.h"
#include "http/message.h"
#include "http/retry_policy.h"
#include "http/slot_ledger.h"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/fwd.hpp>
#include <boost/json/storage_ptr.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace gym::telemetry {
class Tracer;
}

namespace gym::http {

// TLS material beyond the system trust store, as PEM files (empty: not used). The OTLP exporter
// fills it from OTEL_EXPORTER_OTLP_CERTIFICATE, _CLIENT_CERTIFICATE and _CLIENT_KEY.
struct TlsFiles {
  std::string ca_file;           // the CAs trusted instead of the system trust store
  std::string certificate_file;  // this client's certificate chain (mutual TLS), with key_file
  std::string key_file;
};

// Pool parameters (docs/reference/http-client.md#limits-top-level-config-keys). Defaults are
// upstream's; every field is per process.
struct PoolParams {
  std::size_t total_limit = 102400;                // connections in use; 0 = unlimited
  std::size_t per_host_limit = 1024;               // per host:port; 0 = unlimited
  std::chrono::milliseconds idle_timeout{15'000};  // idle keep-alive connections closed after
  int tcp_keepalive_idle_seconds = 60;             // TCP_KEEPIDLE, 1..32767
  int tcp_keepalive_interval_seconds = 10;         // TCP_KEEPINTVL, 1..32767
  int tcp_keepalive_probes = 3;                    // TCP_KEEPCNT, 1..127
  double retry_budget_seconds = 300;               // global_http_retry_budget_seconds; 0 = none
  // global_http_connect_timeout_seconds: resolving, connecting and the TLS handshake of one
  // attempt; zero = none.
  std::chrono::milliseconds connect_timeout{30'000};
  // global_http_read_timeout_seconds: the longest wait for the next byte of a response, or for
  // the server to take the next part of the request; zero = none. Generous: a generation can
  // take many minutes before its first byte.
  std::chrono::milliseconds read_timeout{3'600'000};
  bool request_debug = false;  // global_aiohttp_client_request_debug
  TlsFiles tls;                // https:// peers: whom to trust, what to present

  // Sizing inputs of the startup capacity report (one log line per process); not enforced.
  int workers = 1;                       // max(1, num_workers)
  std::size_t aggregate_total = 102400;  // before division by workers
  std::size_t aggregate_per_host = 1024;
  std::optional<std::size_t> intended_per_worker;           // ceil(intended / workers)
  std::optional<std::size_t> intended_per_host_per_worker;  // ceil(intended_per_host / workers)

  // Reads the global_aiohttp_* keys of the merged config and divides the aggregate limits by
  // the server's workers. Throws core::ConfigError naming the key on an invalid value.
  static PoolParams from_config(const boost::json::object& cfg, int num_workers);

  // The startup capacity report: one debug line (-v), plus a warning per sizing problem. Logged by
  // the owner of the process's rollout pool (a server process, the collector), not by helpers
  // such as the OTLP exporter's client.
  // Returns the warnings (for tests).
  std::vector<std::string> log_capacity_report() const;
};

using QueueOutcome = telemetry::QueueOutcome;  // how a wait ended

// Sees every acquisition; the telemetry layer implements it. Called on the loop thread.
class PoolObserver {
 public:
  virtual ~PoolObserver() = default;
  virtual void acquisition_started(const std::string& destination) noexcept = 0;
  virtual void wait_finished(const std::string& destination, QueueConstraint constraint,
                             QueueOutcome outcome, std::chrono::nanoseconds waited) noexcept = 0;
};

// The longest response body a request takes unless it says otherwise (ClientRequest::
// max_response_bytes): far above any answer between gym servers (a rollout with token ids and
// logprobs is a few MB), far below what would hurt the process.
inline constexpr std::uint64_t kDefaultMaxResponseBytes = 256ull << 20;
// The longest status line and header block of a response; each chunk-size line and the trailer
// section of a chunked body are held to it too.
inline constexpr std::size_t kMaxResponseHeadBytes = 1u << 20;

struct ClientRequest {
  Method method = Method::post;
  std::string url;                       // http(s)://host:port/path?query
  std::string body;                      // sent as is; Content-Type application/json when non-empty
  Cookies cookies;                       // sent as one Cookie header
  std::vector<Header> headers;           // extra headers
  std::string destination = "external";  // metric label: configured server name or "external"
  CallKind kind = CallKind::internal;    // how it is retried: http/retry_policy.h
  bool retry = true;                     // false: one attempt (readiness and status probes)
  std::optional<std::chrono::milliseconds> timeout;  // whole-attempt timeout; none by default
  // The setting `timeout` comes from, named when it fires ("no answer within <setting>=N s");
  // empty: "timed out".
  std::string timeout_setting;
  // The destination's health (an external endpoint's): every attempt is reported to it, and once
  // it is unavailable a failed attempt ends the call with EndpointUnavailableError. Null: none.
  EndpointHealth* health = nullptr;
  // Replaces the pool's read timeout (global_http_read_timeout_seconds) for this request; zero:
  // none. The collector's /run gets no answer byte until the rollout ends, however long that is.
  std::optional<std::chrono::milliseconds> read_timeout;
  // The caller's trace (the handler's Request::trace): the parent of the CLIENT span, and what goes
  // out as traceparent/tracestate/baggage (W3C propagation).
  telemetry::TraceContext trace;
  // When the client starts a CLIENT span for this request, its context is written here (the
  // collector puts the trace id of a failed rollout into its failure row).
  telemetry::SpanContext* started = nullptr;
  // The longest response body taken; 0: no limit. A longer one (a Content-Length above it, or
  // that many bytes received) ends the attempt at once with ResponseTooLargeError, never retried:
  // an endless answer costs this process at most this much memory.
  std::uint64_t max_response_bytes = kDefaultMaxResponseBytes;
  // The setting `max_response_bytes` comes from, named in that error ("response body from <url>
  // exceeded N bytes (<setting>)"); empty: the client's default.
  std::string max_response_setting;
};

struct ClientResponse {
  int status = 0;
  std::string body;
  std::vector<Header> headers;
  Cookies cookies;  // from Set-Cookie, in order

  // Throws std::runtime_error on a malformed body. `storage`: where the value lives (e.g. the
  // arena of the request being handled); the heap by default.
  boost::json::value json(boost::json::storage_ptr storage = {}) const;
};

// A request that could not get a response (after its retries).
class RequestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The request's endpoint (ClientRequest::health) is unavailable: it failed every attempt of every
// call for a while, so this call failed without using the rest of its retry budget. what():
// "every call for 61 s was refused or answered 5xx (last: ...)".
class EndpointUnavailableError : public RequestError {
 public:
  using RequestError::RequestError;
};

// The retry budget ran out while an external endpoint kept answering a retried status (429, 503,
// ...): the last answer, and how long and how often it was tried.
class RetryBudgetError : public RequestError {
 public:
  RetryBudgetError(const std::string& message, ClientResponse last, double seconds, int attempts)
      : RequestError(message), last_(std::move(last)), seconds_(seconds), attempts_(attempts) {}
  const ClientResponse& last() const { return last_; }
  double seconds() const { return seconds_; }  // global_http_retry_budget_seconds
  int attempts() const { return attempts_; }

 private:
  ClientResponse last_;
  double seconds_;
  int attempts_;
};

// The TLS handshake of an https:// request was refused: an untrusted or expired certificate, a
// certificate for another host, no common protocol version. The message names host:port and
// the OpenSSL reason, e.g. "TLS handshake with localhost:4318 failed: certificate verify failed
// (SSL routines): unable to get local issuer certificate". Never retried: the next attempt
// would fail the same way.
class TlsError : public RequestError {
 public:
  using RequestError::RequestError;
};

// The response was longer than the request allows (ClientRequest::max_response_bytes), or its
// header block, a chunk-size line or its trailers longer than kMaxResponseHeadBytes. what():
// "response body from http://host:port/path exceeded 67108864 bytes (model_response_max_bytes)".
// Never retried: the server would most likely answer the same way again.
class ResponseTooLargeError : public RequestError {
 public:
  using RequestError::RequestError;
};

struct ClientStats {
  std::uint64_t acquisitions = 0;  // connection acquisitions (one per attempt and hop)
  std::uint64_t queued = 0;        // acquisitions that had to wait
  std::uint64_t abandoned = 0;     // waits that ended without a connection
  std::uint64_t connections_opened = 0;
  std::uint64_t connections_reused = 0;
  std::uint64_t retries = 0;
  std::size_t max_in_use = 0;  // peak connections in use
  std::size_t max_open = 0;    // peak open sockets (in use + idle)
};

class HttpClient {
 public:
  // `tracer`: CLIENT spans and context injection when its `http_client` group is on.
  HttpClient(boost::asio::any_io_executor executor, PoolParams params,
             PoolObserver* observer = nullptr, const telemetry::Tracer* tracer = nullptr);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends a request with retries, redirects and the retry budget. Throws RequestError.
  boost::asio::awaitable<ClientResponse> request(ClientRequest req);
  // POST of a JSON body rendered the NeMo Gym way.
  boost::asio::awaitable<ClientResponse> post_json(std::string url, const boost::json::value& body,
                                                   Cookies cookies, std::string destination);

  const ClientStats& stats() const;
  const PoolParams& params() const;
  std::size_t in_use() const;
  std::size_t open_connections() const;
  // Whether requests get CLIENT spans (the tracer's `http_client` group is on): what a caller
  // checks before building span attributes such as the rollout id (a group that is off costs
  // nothing).
  bool traced() const;

  struct Pool;

 private:
  std::shared_ptr<Pool> pool_;
};

}  // namespace gym::http
