#pragma once
// When an HTTP call is tried again (docs/design/failures-and-retries.md#outbound-http-calls), as a
// pure decision: no sockets, no timers, the time is passed in. It owns the statuses that mean "try
// again later" for every caller: the client's external calls, the OTLP exporter
// (exporters/otlp/retry.h) and the collector's failure classes (rollouts/collector.cpp).
//
// | Outcome of an attempt           | internal call        | external call                       |
// | ------------------------------- | -------------------- | ----------------------------------- |
// | any HTTP status                 | returned             | 429 502 503 504 520: retried,       |
// |                                 |                      | not counted; 500: 3 tries in total; |
// |                                 |                      | others returned                     |
// | refused, or closed before the   | retried              | retried                             |
// | whole request was sent          |                      |                                     |
// | reset / closed after the whole  | retried              | 3 tries in total (the endpoint may  |
// | request was sent, no response   |                      | have generated: it costs money)     |
// | stale keep-alive connection     | retried at once      | retried at once                     |
// | TLS handshake refused           | fails (TlsError)     | fails (TlsError)                    |
// | read timeout (server silent)    | fails                | fails                               |
// | response too large              | fails (ResponseToo-  | fails (ResponseTooLargeError)       |
// |                                 | LargeError)          |                                     |
// | other transport errors          | retried              | 3 tries in total                    |
//
// Retries wait kRetryWait, or what the Retry-After of an external call's 429 or 503 asks for, and
// stop when the retry budget (a deadline) would pass during the wait.
// A call made with retry = false gets one attempt: its response is returned, its failure thrown.
// Not thread-safe: one policy per logical request.
#include <chrono>
#include <optional>
#include <string_view>

namespace gym::http {

// Gym-internal calls return every HTTP status to the caller; external calls (to upstream model
// endpoints) retry 429/5xx as the table above says.
enum class CallKind { internal, external };

// Why an attempt got no response.
enum class AttemptFailure {
  refused_or_closed,     // refused, or closed before the whole request was sent: retried for every
                         // call (the endpoint cannot have acted on it)
  closed_after_request,  // reset or closed after the whole request was sent, before a complete
                         // response: the endpoint may have generated, so external calls count it
  stale,                 // a reused keep-alive connection closed under us: retried at once
  tls,                   // TLS handshake refused (certificate, host name, protocol): never retried
  read_timeout,          // the server took the request, then sent nothing for the read timeout:
                         // never retried (the next attempt would likely wait as long again)
  too_large,             // the response (body, header block, chunk line) exceeded its bound:
                         // never retried (the server would answer the same way again)
  other,                 // other transport errors (timeout, name resolution, pool wait given up)
};

// The statuses of a server that asks to be tried again later: rate limited (429), or a gateway
// in front of it failed (502, 503, 504). Retried by the OTLP exporter and by external calls;
// a /run answered with one is an agent_request_failed row, not an agent_run_error.
bool is_transient_status(int status);

// What an external call retries without counting a try: the transient statuses and 520 (the
// "unknown error" of the Cloudflare proxies in front of hosted model APIs). Only external calls
// retry 520; every other caller treats it as a final answer.
bool is_transient_external_status(int status);

enum class RetryAction {
  done,              // give the response to the caller
  fail,              // throw RequestError with the attempt's error
  fail_tls,          // throw TlsError with the attempt's error
  fail_too_large,    // throw ResponseTooLargeError with the attempt's error
  retry_now,         // a stale connection: try again at once, with a fresh connection
  retry_after_wait,  // wait `wait`, then try again
  budget_exhausted,  // a retry was due, but the budget would run out during the wait
};

// Why a retry is due (the `kind` of the model_retry log line for statuses).
enum class RetryReason {
  none,              // no retry
  rate_limit,        // HTTP 429
  server_error,      // another retried HTTP status
  connection,        // refused, reset or closed before a response
  stale_connection,  // a reused keep-alive connection closed under us
  transport,         // another transport error
};
std::string_view to_string(RetryReason reason);

// The wait a Retry-After header value asks for: delta-seconds ("120") or an HTTP-date ("Wed, 21
// Oct 2015 07:28:00 GMT", against `now`; a date passed is zero). None when it is neither.
std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now);

struct RetryDecision {
  RetryAction action = RetryAction::done;
  RetryReason reason = RetryReason::none;
  std::chrono::milliseconds wait{0};  // for retry_after_wait
  int try_number = 0;  // external calls: the try this attempt counts as (1, 2, ...), for logs
};

class RetryPolicy {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kRetryWait{500};
  static constexpr int kExternalMaxTries = 3;  // 500s and transport errors of external calls

  // `retry` false: one attempt. `deadline`: end of the retry budget, none for unbounded.
  RetryPolicy(CallKind kind, bool retry, std::optional<Clock::time_point> deadline);

  // The retry budget of a call starting at `start`: `budget_seconds` after it, none when the
  // budget is 0 (unbounded) or the call is not retried.
  static std::optional<Clock::time_point> budget_deadline(Clock::time_point start,
                                                          double budget_seconds, bool retry);

  // After an attempt that got a response with `status` (redirects already followed).
  // `retry_after`: the wait its Retry-After header asks for (parse_retry_after), honoured on an
  // external call's 429 and 503 instead of kRetryWait (never shorter).
  RetryDecision after_response(int status, Clock::time_point now,
                               std::optional<std::chrono::milliseconds> retry_after = {});
  // After an attempt that got no response.
  RetryDecision after_failure(AttemptFailure failure, Clock::time_point now);

  std::optional<Clock::time_point> deadline() const { return deadline_; }
  int counted_tries() const { return counted_tries_; }

 private:
  // A retry after `wait`, counted as a try or not; budget_exhausted past the deadline.
  RetryDecision retry_later(RetryReason reason, bool counted, Clock::time_point now,
                            std::chrono::milliseconds wait = kRetryWait);

  CallKind kind_;
  bool retry_;
  std::optional<Clock::time_point> deadline_;
  int counted_tries_ = 0;
};

}  // namespace gym::http
