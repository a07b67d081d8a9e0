#pragma once
// The export decisions (docs/design/failures-and-retries.md#telemetry-export), as pure functions
// tested without sockets: which outcomes are retried (HTTP statuses and gRPC status codes), how
// long to wait, when to give up, what an accepted response says about rejected items, and how often
// a failure is logged. OtlpSender (otlp_sender.h) applies them to both of its transports.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "exporters/otlp/otlp_settings.h"

namespace gym::exporters {

using Clock = std::chrono::steady_clock;

enum class AttemptOutcome { success, retryable, permanent };

// 2xx: success. The transient statuses of http::is_transient_status (429, 502, 503, 504), and no
// response at all (connection error, timeout, `status` = nullopt): retryable. Any other status:
// permanent (the batch is dropped). A refused TLS handshake (http::TlsError) is permanent too; the
// exporter handles it before classifying.
AttemptOutcome classify(std::optional<int> status);

// A gRPC status code (grpc::StatusCode's numbers): OK (0) is success; UNAVAILABLE (14),
// RESOURCE_EXHAUSTED (8) and DEADLINE_EXCEEDED (4) are retryable like 503/429;
// every other code is permanent.
AttemptOutcome classify_grpc(int code);

// A Retry-After header given in seconds ("0", "120"); nullopt for absent, HTTP-date or
// malformed values.
std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value);

// The wait before retry number `retry` (1, 2, ...): Retry-After when the server gave one, else
// 1 s, 2 s, 4 s, ... scaled by (1 + 0.2 * jitter), jitter in [-1, 1].
std::chrono::milliseconds backoff(int retry, double jitter,
                                  std::optional<std::chrono::milliseconds> retry_after);

// The wait before retry number `retry` if the retry still fits the export's budget: nullopt when
// `now` + the backoff reaches `end` (the OTLP timeout counted from the first attempt, or the
// caller's deadline if sooner), so the batch is dropped instead.
std::optional<std::chrono::milliseconds> retry_delay(
    int retry, double jitter, std::optional<std::chrono::milliseconds> retry_after,
    Clock::time_point now, Clock::time_point end);

// What a collector did not accept from a batch it answered with success.
struct PartialSuccess {
  // rejected_data_points, rejected_spans or rejected_log_records (field 1 of each signal's
  // Export*PartialSuccess).
  std::int64_t rejected = 0;
  std::string error_message;  // field 2
};

// The partial_success of an accepted Export<Signal>ServiceResponse: protobuf for grpc and
// http/protobuf, OTLP/JSON for http/json; nullopt when the body is empty, unparseable, or reports
// nothing.
std::optional<PartialSuccess> parse_partial_success(std::string_view body, OtlpProtocol protocol,
                                                    Signal signal = Signal::metrics);

// What a signal's items are called in log lines: "point", "span", "log record".
std::string_view item_noun(Signal signal);

// Rate-limited failure reporting: the first failure of a run is reported at once, later ones at
// most once per interval as a summary of what was dropped since the last line. Lines name the
// signal: "telemetry: metrics export failed, dropped 12 point(s): ...", "telemetry: traces export
// failing: dropped 3 batch(es), 1536 span(s) in the last 10.0 s; last error: ...".
class FailureLog {
 public:
  explicit FailureLog(std::chrono::milliseconds interval, Signal signal = Signal::metrics)
      : interval_(interval), signal_(signal) {}

  // Records one dropped batch of `items`; returns the line to log now, if any.
  std::optional<std::string> dropped(std::size_t items, const std::string& error,
                                     Clock::time_point now);

  // At shutdown: the summary of drops not logged yet (held back by the interval), if any, so
  // that the drop of a final export is always logged.
  std::optional<std::string> pending(Clock::time_point now);

 private:
  std::string summary(Clock::time_point now) const;

  std::chrono::milliseconds interval_;
  Signal signal_;
  bool logged_any_ = false;
  Clock::time_point last_line_{};
  std::uint64_t batches_ = 0;  // since the last line
  std::uint64_t items_ = 0;
  std::string last_error_;
};

}  // namespace gym::exporters
