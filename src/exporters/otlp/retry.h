#pragma once
// The export decisions of decision D9, as pure functions tested without sockets: which outcomes
// are retried, how long to wait, when to give up, what a 2xx body says about rejected points,
// and how often a failure is logged.
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

// A Retry-After header given in seconds ("0", "120"); nullopt for absent, HTTP-date or
// malformed values.
std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value);

// The wait before retry number `retry` (1, 2, ...): Retry-After when the server gave one, else
// 1 s, 2 s, 4 s, ... scaled by (1 + 0.2 * jitter), jitter in [-1, 1].
std::chrono::milliseconds backoff(int retry, double jitter,
                                  std::optional<std::chrono::milliseconds> retry_after);

struct PartialSuccess {
  std::int64_t rejected_data_points = 0;
  std::string error_message;
};

// The partial_success of a 2xx ExportMetricsServiceResponse body (protobuf or OTLP/JSON, per
// `protocol`); nullopt when the body is empty, unparseable, or reports nothing.
std::optional<PartialSuccess> parse_partial_success(std::string_view body, OtlpProtocol protocol);

// Rate-limited failure reporting (D9): the first failure of a run is reported at once, later
// ones at most once per interval as a summary of what was dropped since the last line.
class FailureLog {
 public:
  explicit FailureLog(std::chrono::milliseconds interval) : interval_(interval) {}

  // Records one dropped batch of `points`; returns the line to log now, if any.
  std::optional<std::string> dropped(std::size_t points, const std::string& error,
                                     Clock::time_point now);

  // At shutdown: the summary of drops not logged yet (held back by the interval), if any, so
  // that the drop of a final export is always logged (telemetry.md 7.6).
  std::optional<std::string> pending(Clock::time_point now);

 private:
  std::string summary(Clock::time_point now) const;

  std::chrono::milliseconds interval_;
  bool logged_any_ = false;
  Clock::time_point last_line_{};
  std::uint64_t batches_ = 0;  // since the last line
  std::uint64_t points_ = 0;
  std::string last_error_;
};

}  // namespace gym::exporters
