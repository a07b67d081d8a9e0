// The innermost cause of a failed /run (issue 13.11): rollouts/failure_cause.h.
#include "rollouts/failure_cause.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace gym::rollouts {
namespace {

namespace json = boost::json;

// What servers::downstream_failure answers: the chain as one JSON string.
std::string agent_chain(const std::string& via, int status, const std::string& inner_body) {
  return json::serialize(json::value(
      json::string("Hit an exception in " + via +
                   " calling an inner server: " + std::to_string(status) + " " + inner_body)));
}

TEST(FailureCause, ReplayNoMatchBehindTheAgentIsTheInnermostCause) {
  auto body = agent_chain(
      "SimpleAgent___mcqa_simple_agent", 409,
      R"({"detail":{"type":"replay_no_match","message":"no recorded input is a prefix"}})");
  auto cause = innermost_cause(500, body);
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->status, 409);
  EXPECT_EQ(cause->type, "replay_no_match");
  EXPECT_EQ(cause->message, "no recorded input is a prefix");
  EXPECT_EQ(cause->via, "SimpleAgent___mcqa_simple_agent");
  EXPECT_EQ(cause->text(),
            "HTTP 409 replay_no_match: no recorded input is a prefix (called by "
            "SimpleAgent___mcqa_simple_agent)");
}

TEST(FailureCause, NestedChainsAreFollowedToTheLastLink) {
  auto inner = agent_chain("ResourcesServer___env", 502,
                           R"({"error":{"message":"upstream is down","type":"server_error"}})");
  auto cause = innermost_cause(500, agent_chain("SimpleAgent___outer", 500, inner));
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->status, 502);
  EXPECT_EQ(cause->type, "server_error");
  EXPECT_EQ(cause->message, "upstream is down");
  EXPECT_EQ(cause->via, "ResourcesServer___env");
}

TEST(FailureCause, PlainTextAndStringDetailsBecomeTheMessage) {
  auto text = innermost_cause(500, agent_chain("A___a", 500, "the model failed on purpose\n"));
  ASSERT_TRUE(text);
  EXPECT_EQ(text->status, 500);
  EXPECT_EQ(text->message, "the model failed on purpose");
  EXPECT_EQ(text->type, "");

  auto detail = innermost_cause(422, R"({"detail":"temperature must be <= 2"})");
  ASSERT_TRUE(detail);
  EXPECT_EQ(detail->text(), "HTTP 422: temperature must be <= 2");
}

TEST(FailureCause, AnEmptyBodyHasNoCause) { EXPECT_FALSE(innermost_cause(503, "")); }

TEST(FailureCause, LongMessagesAreCutToOneReadableLine) {
  auto cause = innermost_cause(500, std::string(5000, 'x') + "\nsecond line");
  ASSERT_TRUE(cause);
  EXPECT_LT(cause->message.size(), 1100u);
  EXPECT_EQ(cause->message.find('\n'), std::string::npos);
}

// The model servers' wording of an endpoint's failure, read back through an agent's chain.
TEST(EndpointFailure, TheModelServersWordingIsReadBack) {
  auto of = [](const std::string& inner) {
    auto body = json::serialize(json::value(json::string(inner)));
    auto cause = innermost_cause(500, agent_chain("SimpleAgent___a", 502, body));
    EXPECT_TRUE(cause);
    return cause ? endpoint_failure_of(*cause) : std::nullopt;
  };
  const std::string url = "http://10.0.0.7:8000/v1/chat/completions";
  auto refused = of("model endpoint " + url + " gave no answer: Connection refused");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->fault, EndpointFault::unreachable);
  EXPECT_EQ(refused->url, url);
  EXPECT_EQ(refused->status, 0);
  auto down = of("model endpoint " + url + " is unavailable: every call for 60 s was refused");
  ASSERT_TRUE(down);
  EXPECT_EQ(down->fault, EndpointFault::unavailable);
  auto limited = of("model endpoint " + url + " answered HTTP 429: slow down");
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->fault, EndpointFault::rate_limited);
  EXPECT_EQ(limited->status, 429);
  EXPECT_EQ(of("model endpoint " + url + " answered HTTP 503: busy")->fault,
            EndpointFault::server_error);
  EXPECT_EQ(of("model endpoint " + url + " answered HTTP 401: bad key")->fault,
            EndpointFault::rejected);
  // A 2xx the model server could not use, and other servers' failures, are not the endpoint's.
  EXPECT_FALSE(of("model endpoint " + url + " answered HTTP 200 with a body that is not JSON"));
  EXPECT_FALSE(of("model endpoint " + url + " answered without choices"));
  EXPECT_FALSE(of("the model failed on purpose"));
}

TEST(EndpointFailure, OutagesAreTheEndpointsAndRefusalsTheRequests) {
  for (auto f : {EndpointFault::unreachable, EndpointFault::server_error,
                 EndpointFault::rate_limited, EndpointFault::unavailable}) {
    EXPECT_TRUE(is_endpoint_outage(f)) << to_string(f);
    EXPECT_EQ(endpoint_fault_named(to_string(f)), f);
  }
  EXPECT_FALSE(is_endpoint_outage(EndpointFault::rejected));
  EXPECT_FALSE(endpoint_fault_named("bogus"));
}

}  // namespace
}  // namespace gym::rollouts
