#include "http/retry_policy.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <string>

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

std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now) {
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.front())))
    value.remove_prefix(1);
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back())))
    value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    // Past a day the budget decides anyway; the cap keeps the arithmetic from overflowing.
    constexpr std::int64_t kMaxSeconds = 86'400;
    std::int64_t seconds = 0;
    for (char c : value) seconds = std::min(kMaxSeconds, seconds * 10 + (c - '0'));
    return std::chrono::seconds(seconds);
  }
  // IMF-fixdate, the form RFC 9110 requires senders to use.
  std::tm tm{};
  const std::string text(value);
  const char* end = ::strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end || *end != '\0') return std::nullopt;
  const auto at = std::chrono::system_clock::from_time_t(::timegm(&tm));
  if (at <= now) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(at - now);
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

RetryDecision RetryPolicy::after_response(int status, Clock::time_point now,
                                          std::optional<std::chrono::milliseconds> retry_after) {
  if (kind_ != CallKind::external || !retry_) return {};
  if (is_transient_external_status(status)) {
    // A server that says when to come back: sooner would only be refused again (and never
    // sooner than the usual wait, so "Retry-After: 0" cannot make a busy loop).
    const auto wait = (status == 429 || status == 503) && retry_after
                          ? std::max(*retry_after, kRetryWait)
                          : kRetryWait;
    return retry_later(status == 429 ? RetryReason::rate_limit : RetryReason::server_error,
                       /*counted=*/false, now, wait);
  }
  if (status == 500 && counted_tries_ + 1 < kExternalMaxTries)
    return retry_later(RetryReason::server_error, /*counted=*/true, now);
  return {};
}

RetryDecision RetryPolicy::after_failure(AttemptFailure failure, Clock::time_point now) {
  // A refused TLS handshake fails the same way on every try (only connection-level failures are
  // retried); the caller sees why at once.
  if (failure == AttemptFailure::tls) return {RetryAction::fail_tls};
  // A server that took the request and went silent (hung, stopped): waiting the read timeout
  // again would only double the stall, and the request may have been acted on.
  if (failure == AttemptFailure::read_timeout) return {RetryAction::fail};
  // An endless or oversized answer: asking again would only cost as much again.
  if (failure == AttemptFailure::too_large) return {RetryAction::fail_too_large};
  if (!retry_) return {RetryAction::fail};
  switch (failure) {
    case AttemptFailure::stale:  // a keep-alive connection the server had closed
      return {RetryAction::retry_now, RetryReason::stale_connection};
    case AttemptFailure::refused_or_closed:
      return retry_later(RetryReason::connection, /*counted=*/false, now);
    case AttemptFailure::closed_after_request:
      // The endpoint got the whole request and may have generated (and billed) an answer: an
      // external call counts it, so a server that drops every answer is not paid for forever.
      if (kind_ == CallKind::internal) return retry_later(RetryReason::connection, false, now);
      if (counted_tries_ + 1 < kExternalMaxTries)
        return retry_later(RetryReason::connection, /*counted=*/true, now);
      return {RetryAction::fail};
    case AttemptFailure::tls:
    case AttemptFailure::read_timeout:
    case AttemptFailure::too_large:
    case AttemptFailure::other:
      break;
  }
  if (kind_ == CallKind::internal) return retry_later(RetryReason::transport, false, now);
  if (counted_tries_ + 1 < kExternalMaxTries)
    return retry_later(RetryReason::transport, /*counted=*/true, now);
  return {RetryAction::fail};
}

RetryDecision RetryPolicy::retry_later(RetryReason reason, bool counted, Clock::time_point now,
                                       std::chrono::milliseconds wait) {
  RetryDecision d{RetryAction::retry_after_wait, reason, wait, counted_tries_ + 1};
  if (counted) ++counted_tries_;
  if (deadline_ && now + wait >= *deadline_) {
    d.action = RetryAction::budget_exhausted;
    d.wait = std::chrono::milliseconds(0);
  }
  return d;
}

}  // namespace gym::http
