// When a model endpoint counts as unavailable (docs/reference/model-servers.md), without sockets or
// timers.
#include "http/endpoint_health.h"

#include <gtest/gtest.h>

using gym::http::EndpointHealth;
using namespace std::chrono_literals;

namespace {
const EndpointHealth::Clock::time_point t0{};
}

TEST(EndpointHealth, UnavailableOnlyAfterEveryAttemptFailedForTheWholeWindow) {
  EndpointHealth h("http://e/v1", 60s);
  EXPECT_FALSE(h.failed("connection refused", t0));
  EXPECT_FALSE(h.failed("HTTP 503: busy", t0 + 59s));
  EXPECT_FALSE(h.unavailable());
  EXPECT_TRUE(h.failed("HTTP 502: bad gateway", t0 + 60s));
  EXPECT_TRUE(h.unavailable());
  EXPECT_EQ(h.why_unavailable(t0 + 61s),
            "every call for 61 s was refused or answered 5xx (last: HTTP 502: bad gateway)");
  EXPECT_TRUE(h.failed("connection refused", t0 + 62s));  // stays so
}

TEST(EndpointHealth, AnyAnswerButA5xxRestartsTheWindowAndMakesItAvailable) {
  EndpointHealth h("http://e/v1", 60s);
  h.failed("connection refused", t0);
  h.answered(t0 + 30s);  // a 429 too: a rate limit means it is alive
  EXPECT_FALSE(h.failed("connection refused", t0 + 80s));
  EXPECT_TRUE(h.failed("connection refused", t0 + 140s));
  h.answered(t0 + 141s);
  EXPECT_FALSE(h.unavailable());
  EXPECT_FALSE(h.failed("connection refused", t0 + 142s));
}

TEST(EndpointHealth, ZeroNeverDeclaresItUnavailable) {
  EndpointHealth h("http://e/v1", 0s);
  EXPECT_FALSE(h.failed("connection refused", t0));
  EXPECT_FALSE(h.failed("connection refused", t0 + 24h));
  EXPECT_FALSE(h.unavailable());
}
