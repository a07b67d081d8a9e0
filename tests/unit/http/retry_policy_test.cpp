// The client's retry decisions (docs/design/failures-and-retries.md#outbound-http-calls), tested
// without sockets or timers.
#include "http/retry_policy.h"

#include <gtest/gtest.h>

#include <chrono>

using gym::http::AttemptFailure;
using gym::http::CallKind;
using gym::http::RetryAction;
using gym::http::RetryPolicy;
using gym::http::RetryReason;
using Clock = RetryPolicy::Clock;
using namespace std::chrono_literals;

namespace {

const Clock::time_point t0{};  // any fixed instant: the policy never reads the clock

RetryPolicy unbounded(CallKind kind) { return RetryPolicy(kind, true, std::nullopt); }

}  // namespace

TEST(RetryPolicy, TransientStatusesAreOneListForEveryone) {
  for (int s : {429, 502, 503, 504}) {
    EXPECT_TRUE(gym::http::is_transient_status(s)) << s;
    EXPECT_TRUE(gym::http::is_transient_external_status(s)) << s;
  }
  // 520 is retried by external calls only (the OTLP exporter and the collector do not).
  EXPECT_FALSE(gym::http::is_transient_status(520));
  EXPECT_TRUE(gym::http::is_transient_external_status(520));
  for (int s : {200, 204, 301, 400, 401, 404, 408, 500, 501, 505, 521}) {
    EXPECT_FALSE(gym::http::is_transient_status(s)) << s;
    EXPECT_FALSE(gym::http::is_transient_external_status(s)) << s;
  }
}

TEST(RetryPolicy, InternalCallsReturnEveryStatus) {
  auto p = unbounded(CallKind::internal);
  for (int s : {200, 429, 500, 502, 503, 504, 520}) {
    auto d = p.after_response(s, t0);
    EXPECT_EQ(d.action, RetryAction::done) << s;
    EXPECT_EQ(d.reason, RetryReason::none) << s;
  }
}

TEST(RetryPolicy, ExternalCallsRetryTransientStatusesWithoutCountingATry) {
  auto p = unbounded(CallKind::external);
  for (int i = 0; i < 10; ++i) {
    auto d = p.after_response(i % 2 ? 429 : 503, t0);
    EXPECT_EQ(d.action, RetryAction::retry_after_wait);
    EXPECT_EQ(d.wait, 500ms);
    EXPECT_EQ(d.reason, i % 2 ? RetryReason::rate_limit : RetryReason::server_error);
    EXPECT_EQ(d.try_number, 1);  // never counted
  }
  EXPECT_EQ(p.counted_tries(), 0);
  EXPECT_EQ(p.after_response(520, t0).reason, RetryReason::server_error);
  EXPECT_EQ(p.after_response(404, t0).action, RetryAction::done);
  EXPECT_EQ(p.after_response(200, t0).action, RetryAction::done);
}

TEST(RetryPolicy, ExternalCallsTry500ThreeTimesInTotal) {
  auto p = unbounded(CallKind::external);
  auto first = p.after_response(500, t0);
  EXPECT_EQ(first.action, RetryAction::retry_after_wait);
  EXPECT_EQ(first.reason, RetryReason::server_error);
  EXPECT_EQ(first.try_number, 1);
  auto second = p.after_response(500, t0);
  EXPECT_EQ(second.action, RetryAction::retry_after_wait);
  EXPECT_EQ(second.try_number, 2);
  EXPECT_EQ(p.after_response(500, t0).action, RetryAction::done);  // the third 500 is returned
  EXPECT_EQ(RetryPolicy::kExternalMaxTries, 3);
}

TEST(RetryPolicy, TransportErrorsOfExternalCallsShareTheTryCountWith500) {
  auto p = unbounded(CallKind::external);
  EXPECT_EQ(p.after_response(500, t0).action, RetryAction::retry_after_wait);
  auto d = p.after_failure(AttemptFailure::other, t0);
  EXPECT_EQ(d.action, RetryAction::retry_after_wait);
  EXPECT_EQ(d.reason, RetryReason::transport);
  EXPECT_EQ(p.after_failure(AttemptFailure::other, t0).action, RetryAction::fail);
}

TEST(RetryPolicy, InternalCallsRetryTransportErrorsUntilTheBudget) {
  auto p = unbounded(CallKind::internal);
  for (int i = 0; i < 20; ++i) {
    auto d = p.after_failure(AttemptFailure::other, t0);
    EXPECT_EQ(d.action, RetryAction::retry_after_wait);
    EXPECT_EQ(d.reason, RetryReason::transport);
  }
  EXPECT_EQ(p.counted_tries(), 0);
}

TEST(RetryPolicy, RefusedOrClosedIsRetriedForEveryCallAndNeverCounted) {
  for (auto kind : {CallKind::internal, CallKind::external}) {
    auto p = unbounded(kind);
    for (int i = 0; i < 10; ++i) {
      auto d = p.after_failure(AttemptFailure::refused_or_closed, t0);
      EXPECT_EQ(d.action, RetryAction::retry_after_wait);
      EXPECT_EQ(d.reason, RetryReason::connection);
      EXPECT_EQ(d.wait, RetryPolicy::kRetryWait);
    }
    EXPECT_EQ(p.counted_tries(), 0);
  }
}

TEST(RetryPolicy, StaleConnectionIsRetriedAtOnceEvenPastTheBudget) {
  RetryPolicy p(CallKind::external, true, t0);  // the budget is already spent
  auto d = p.after_failure(AttemptFailure::stale, t0 + 1h);
  EXPECT_EQ(d.action, RetryAction::retry_now);
  EXPECT_EQ(d.reason, RetryReason::stale_connection);
  EXPECT_EQ(d.wait, 0ms);
}

TEST(RetryPolicy, RefusedTlsHandshakeIsNeverRetried) {
  for (bool retry : {true, false}) {
    RetryPolicy p(CallKind::internal, retry, std::nullopt);
    EXPECT_EQ(p.after_failure(AttemptFailure::tls, t0).action, RetryAction::fail_tls);
  }
}

TEST(RetryPolicy, ReadTimeoutIsNeverRetried) {
  // The server took the request and went silent: another attempt would wait as long again.
  for (auto kind : {CallKind::internal, CallKind::external})
    EXPECT_EQ(unbounded(kind).after_failure(AttemptFailure::read_timeout, t0).action,
              RetryAction::fail);
}

TEST(RetryPolicy, OneAttemptCallsReturnStatusesAndFailOnTransportErrors) {
  RetryPolicy p(CallKind::external, false, std::nullopt);
  EXPECT_EQ(p.after_response(503, t0).action, RetryAction::done);
  EXPECT_EQ(p.after_response(500, t0).action, RetryAction::done);
  for (auto f : {AttemptFailure::refused_or_closed, AttemptFailure::stale, AttemptFailure::other})
    EXPECT_EQ(p.after_failure(f, t0).action, RetryAction::fail);
}

TEST(RetryPolicy, BudgetEndsRetriesWhenTheWaitWouldReachTheDeadline) {
  const auto deadline = t0 + 10s;
  RetryPolicy p(CallKind::internal, true, deadline);
  EXPECT_EQ(p.after_failure(AttemptFailure::refused_or_closed, deadline - 501ms).action,
            RetryAction::retry_after_wait);
  auto d = p.after_failure(AttemptFailure::refused_or_closed, deadline - 500ms);
  EXPECT_EQ(d.action, RetryAction::budget_exhausted);
  EXPECT_EQ(d.reason, RetryReason::connection);  // the last error is still named
  RetryPolicy ext(CallKind::external, true, deadline);
  auto r = ext.after_response(429, deadline);
  EXPECT_EQ(r.action, RetryAction::budget_exhausted);
  EXPECT_EQ(r.reason, RetryReason::rate_limit);
}

TEST(RetryPolicy, BudgetDeadline) {
  EXPECT_EQ(RetryPolicy::budget_deadline(t0, 300, true), t0 + 300s);
  EXPECT_EQ(RetryPolicy::budget_deadline(t0, 0.25, true), t0 + 250ms);
  EXPECT_EQ(RetryPolicy::budget_deadline(t0, 0, true), std::nullopt);     // 0: unbounded
  EXPECT_EQ(RetryPolicy::budget_deadline(t0, 300, false), std::nullopt);  // one attempt
}

TEST(RetryPolicy, ReasonLabels) {
  EXPECT_EQ(to_string(RetryReason::rate_limit), "rate_limit");
  EXPECT_EQ(to_string(RetryReason::server_error), "server_error");
  EXPECT_EQ(to_string(RetryReason::connection), "connection");
  EXPECT_EQ(to_string(RetryReason::stale_connection), "stale_connection");
  EXPECT_EQ(to_string(RetryReason::transport), "transport");
}

TEST(RetryPolicy, AConnectionClosedAfterTheWholeRequestCountsATryForExternalCalls) {
  // The endpoint got the request and may have generated (and billed) an answer.
  auto ext = unbounded(CallKind::external);
  for (int i = 1; i < RetryPolicy::kExternalMaxTries; ++i) {
    auto d = ext.after_failure(AttemptFailure::closed_after_request, t0);
    EXPECT_EQ(d.action, RetryAction::retry_after_wait);
    EXPECT_EQ(d.reason, RetryReason::connection);
    EXPECT_EQ(d.try_number, i);
  }
  EXPECT_EQ(ext.after_failure(AttemptFailure::closed_after_request, t0).action, RetryAction::fail);
  // It shares the count with 500s; a refused connection (nothing delivered) still does not count.
  auto mixed = unbounded(CallKind::external);
  EXPECT_EQ(mixed.after_response(500, t0).action, RetryAction::retry_after_wait);
  EXPECT_EQ(mixed.after_failure(AttemptFailure::refused_or_closed, t0).action,
            RetryAction::retry_after_wait);
  EXPECT_EQ(mixed.after_failure(AttemptFailure::closed_after_request, t0).action,
            RetryAction::retry_after_wait);
  EXPECT_EQ(mixed.after_failure(AttemptFailure::closed_after_request, t0).action,
            RetryAction::fail);
  // Internal calls are unchanged: retried, never counted.
  auto internal = unbounded(CallKind::internal);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(internal.after_failure(AttemptFailure::closed_after_request, t0).action,
              RetryAction::retry_after_wait);
  EXPECT_EQ(internal.counted_tries(), 0);
}

TEST(RetryPolicy, RetryAfterOf429And503IsHonouredWithinTheBudget) {
  auto p = unbounded(CallKind::external);
  EXPECT_EQ(p.after_response(429, t0, 7s).wait, 7s);
  EXPECT_EQ(p.after_response(503, t0, 2s).wait, 2s);
  EXPECT_EQ(p.after_response(429, t0).wait, RetryPolicy::kRetryWait);      // none given
  EXPECT_EQ(p.after_response(429, t0, 0s).wait, RetryPolicy::kRetryWait);  // never a busy loop
  EXPECT_EQ(p.after_response(502, t0, 7s).wait, RetryPolicy::kRetryWait);  // 429 and 503 only
  EXPECT_EQ(p.counted_tries(), 0);
  // A wait that would pass the deadline ends the call now instead of sleeping past the budget.
  RetryPolicy bounded(CallKind::external, true, t0 + 10s);
  EXPECT_EQ(bounded.after_response(429, t0, 9s).action, RetryAction::retry_after_wait);
  auto d = bounded.after_response(429, t0, 10s);
  EXPECT_EQ(d.action, RetryAction::budget_exhausted);
  EXPECT_EQ(d.reason, RetryReason::rate_limit);
  // Internal calls return the status whatever it asks.
  EXPECT_EQ(unbounded(CallKind::internal).after_response(429, t0, 1s).action, RetryAction::done);
}

TEST(RetryPolicy, ParsesRetryAfterAsSecondsOrAnHttpDate) {
  using gym::http::parse_retry_after;
  const auto now = std::chrono::system_clock::from_time_t(1445412480);  // 2015-10-21 07:28:00
  EXPECT_EQ(parse_retry_after("120", now), 120s);
  EXPECT_EQ(parse_retry_after(" 3 ", now), 3s);
  EXPECT_EQ(parse_retry_after("0", now), 0s);
  EXPECT_EQ(parse_retry_after("99999999999999999999", now), 86400s);  // capped, no overflow
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now), 30s);
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now), 0s);  // already passed
  EXPECT_EQ(parse_retry_after("", now), std::nullopt);
  EXPECT_EQ(parse_retry_after("-1", now), std::nullopt);
  EXPECT_EQ(parse_retry_after("1.5", now), std::nullopt);
  EXPECT_EQ(parse_retry_after("soon", now), std::nullopt);
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT trailing", now), std::nullopt);
}
