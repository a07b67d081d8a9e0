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

// gym-cpp's agents name the call that failed (servers::downstream_failure): the inner server's
// instance and route are part of the cause, so a Python server's 500 or missing route is not
// taken for the agent's.
std::string named_chain(const std::string& via, const std::string& callee, int status,
                        const std::string& inner_body) {
  return json::serialize(json::value(json::string("Hit an exception in " + via +
                                                  " calling an inner server: " + callee + ": " +
                                                  std::to_string(status) + " " + inner_body)));
}

TEST(FailureCause, TheInnerServerAndRouteAreNamed) {
  auto cause = innermost_cause(500, named_chain("SimpleAgent___my_agent", "my_env POST /verify",
                                                500, "Internal Server Error"));
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->status, 500);
  EXPECT_EQ(cause->callee, "my_env POST /verify");
  EXPECT_EQ(cause->via, "SimpleAgent___my_agent");
  EXPECT_EQ(cause->message, "Internal Server Error");
  EXPECT_EQ(cause->text(),
            "HTTP 500: Internal Server Error (from my_env POST /verify, called by "
            "SimpleAgent___my_agent)");

  auto missing = innermost_cause(500, named_chain("SimpleAgent___a", "old_env POST /seed_session",
                                                  404, R"({"detail":"Not Found"})"));
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->text(),
            "HTTP 404: Not Found (from old_env POST /seed_session, called by SimpleAgent___a)");
}

// Nested: the agent's call to its own /v1/responses failed because the model server did; the
// innermost link's callee wins, and an upstream-worded link inside a named one is read too.
TEST(FailureCause, NamedAndUpstreamLinksMix) {
  auto inner = named_chain("SimpleAgent___a", "policy_model POST /v1/responses", 409,
                           R"({"detail":{"type":"replay_no_match","message":"no match"}})");
  auto cause =
      innermost_cause(500, named_chain("SimpleAgent___a", "a POST /v1/responses", 500, inner));
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->callee, "policy_model POST /v1/responses");
  EXPECT_EQ(cause->type, "replay_no_match");

  auto upstream_inside =
      innermost_cause(500, named_chain("SimpleAgent___a", "a POST /v1/responses", 500,
                                       agent_chain("PyAgent___b", 502, "bad gateway")));
  ASSERT_TRUE(upstream_inside);
  EXPECT_EQ(upstream_inside->status, 502);
  EXPECT_EQ(upstream_inside->callee, "");
  EXPECT_EQ(upstream_inside->via, "PyAgent___b");
  EXPECT_EQ(upstream_inside->text(), "HTTP 502: bad gateway (called by PyAgent___b)");
}

// Text that only looks like a chain stays a message.
TEST(FailureCause, AChainWithoutAStatusIsAMessage) {
  auto cause = innermost_cause(
      500, "Hit an exception in X calling an inner server: the server: was not there");
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->via, "");
  EXPECT_EQ(cause->status, 500);
  EXPECT_NE(cause->message.find("the server: was not there"), std::string::npos);
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

TEST(EndpointFailure, ReadBackThroughANamedChain) {
  auto inner = json::serialize(
      json::value(json::string("model endpoint http://10.0.0.7:8000/v1 answered HTTP 500: boom")));
  auto cause = innermost_cause(
      500, named_chain("SimpleAgent___a", "policy_model POST /v1/responses", 502, inner));
  ASSERT_TRUE(cause);
  auto failure = endpoint_failure_of(*cause);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->fault, EndpointFault::server_error);
  EXPECT_EQ(failure->url, "http://10.0.0.7:8000/v1");
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
