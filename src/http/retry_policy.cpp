#include "http/retry_policy.h"

namespace gym::http {

bool is_transient_status(int status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

bool is_transient_external_status(int status) {
  return is_transient_status(status) || status == 520;
}

std::string_view to_string(RetryReason reason) {
  switch (reason) {
    case RetryReason::none:
      return "none";
    case RetryReason::rate_limit:
      return "rate_limit";
    case RetryReason::server_error:
      return "server_error";
    case RetryReason::connection:
      return "connection";
    case RetryReason::stale_connection:
      return "stale_connection";
    case RetryReason::transport:
      return "transport";
  }
  return "none";
}

RetryPolicy::RetryPolicy(CallKind kind, bool retry, std::optional<Clock::time_point> deadline)
    : kind_(kind), retry_(retry), deadline_(deadline) {}

std::optional<RetryPolicy::Clock::time_point> RetryPolicy::budget_deadline(Clock::time_point start,
                                                                           double budget_seconds,
                                                                           bool retry) {
  if (budget_seconds <= 0 || !retry) return std::nullopt;
  return start +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(budget_seconds));
}

RetryDecision RetryPolicy::after_response(int status, Clock::time_point now) {
  if (kind_ != CallKind::external || !retry_) return {};
  if (is_transient_external_status(status))
    return retry_later(status == 429 ? RetryReason::rate_limit : RetryReason::server_error,
                       /*counted=*/false, now);
  if (status == 500 && counted_tries_ + 1 < kExternalMaxTries)
    return retry_later(RetryReason::server_error, /*counted=*/true, now);
  return {};
}

RetryDecision RetryPolicy::after_failure(AttemptFailure failure, Clock::time_point now) {
  // A refused TLS handshake fails the same way on every try (runtime.md 8.3 retries
  // connection-level failures only); the caller sees why at once.
  if (failure == AttemptFailure::tls) return {RetryAction::fail_tls};
  // A server that took the request and went silent (hung, stopped): waiting the read timeout
  // again would only double the stall, and the request may have been acted on.
  if (failure == AttemptFailure::read_timeout) return {RetryAction::fail};
  if (!retry_) return {RetryAction::fail};
  switch (failure) {
    case AttemptFailure::stale:  // a keep-alive connection the server had closed
      return {RetryAction::retry_now, RetryReason::stale_connection};
    case AttemptFailure::refused_or_closed:
      return retry_later(RetryReason::connection, /*counted=*/false, now);
    case AttemptFailure::tls:
    case AttemptFailure::read_timeout:
    case AttemptFailure::other:
      break;
  }
  if (kind_ == CallKind::internal) return retry_later(RetryReason::transport, false, now);
  if (counted_tries_ + 1 < kExternalMaxTries)
    return retry_later(RetryReason::transport, /*counted=*/true, now);
  return {RetryAction::fail};
}

RetryDecision RetryPolicy::retry_later(RetryReason reason, bool counted, Clock::time_point now) {
  RetryDecision d{RetryAction::retry_after_wait, reason, kRetryWait, counted_tries_ + 1};
  if (counted) ++counted_tries_;
  if (deadline_ && now + kRetryWait >= *deadline_) {
    d.action = RetryAction::budget_exhausted;
    d.wait = std::chrono::milliseconds(0);
  }
  return d;
}

}  // namespace gym::http
