// example_tool_call_multireward (upstream resources_servers/example_tool_call_multireward):
// upstream's documented cases (its tests/test_app.py) and the quirks of the three components,
// table-driven, through the routes example_tool_call_multireward_environment() gives a
// resources server. Expectations checked against upstream's functions under CPython.
#include "builtin_environments.h"
#include "core/json_text.h"
#include "environment_routes.h"
#include "http/router.h"
#include "servers/registry.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace json = boost::json;
using gym::http::Method;

namespace {

class MultiReward : public ::testing::Test {
 protected:
  gym::http::Response post(const std::string& path, const std::string& body) const {
    return routes_.post(path, body);
  }

  gym::test::EnvironmentRoutes routes_{
      gym::environments::example_tool_call_multireward_environment()};
};

// Upstream's WEATHER_TOOLS.
const char* kWeatherTools = R"([{"type":"function","name":"get_weather",
  "description":"Get the current weather for a city.",
  "parameters":{"type":"object","properties":{"city":{"type":"string","description":""}},
                "required":["city"],"additionalProperties":false},"strict":true}])";
const char* kExpected = R"({"name":"get_weather","arguments":{"city":"San Francisco"}})";

json::value call(const std::string& name, const std::string& arguments) {
  return json::object{
      {"call_id", "call_1"}, {"name", name}, {"arguments", arguments}, {"type", "function_call"}};
}
json::value sf_call() { return call("get_weather", R"({"city": "San Francisco"})"); }

json::value assistant_text(const std::string& text) {
  return json::object{
      {"id", "msg_1"},
      {"type", "message"},
      {"role", "assistant"},
      {"status", "completed"},
      {"content", json::array{json::object{
                      {"type", "output_text"}, {"text", text}, {"annotations", json::array{}}}}}};
}

// Upstream's _request(output, expected_call), with the tools as given.
std::string request(json::array output, const std::string& expected = kExpected,
                    const std::string& tools = kWeatherTools) {
  json::object body{
      {"responses_create_params",
       json::object{{"input", json::array{json::object{{"role", "user"},
                                                       {"content", "weather in San Francisco?"}}}},
                    {"tools", json::parse(tools)}}},
      {"response", json::object{{"id", "resp_test"}, {"output", std::move(output)}}}};
  if (!expected.empty()) body["expected_call"] = json::parse(expected);
  return json::serialize(body);
}

struct Case {
  const char* name;
  std::string body;
  double correctness, schema_valid, format;
};

}  // namespace

TEST_F(MultiReward, Components) {
  const std::vector<Case> cases = {
      // upstream tests/test_app.py
      {"perfect", request({sf_call()}), 1, 1, 1},
      {"wrong city keeps schema and format",
       request({call("get_weather", R"({"city": "New York"})")}), 0, 1, 1},
      {"missing required parameter", request({call("get_weather", "{}")}), 0, 0, 1},
      {"invalid JSON arguments", request({call("get_weather", "{not valid json")}), 0, 0, 1},
      {"extra text drops format", request({sf_call(), assistant_text("Here you go!")}), 1, 1, 0},
      {"two calls drop format", request({sf_call(), sf_call()}), 1, 1, 0},
      // the rest of the rule
      {"a simple_agent rollout always has its final message",
       request(
           {sf_call(),
            json::object{{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "{}"}},
            assistant_text("It is sunny.")}),
       1, 1, 0},
      {"no call", request({assistant_text("Sunny.")}), 0, 0, 0},
      {"any later call may be the correct one",
       request({call("get_weather", R"({"city":"Paris"})"), sf_call()}), 1, 1, 0},
      {"only the first call's schema counts", request({call("get_weather", "[]"), sf_call()}), 1, 0,
       0},
      {"extra arguments are fine",
       request({call("get_weather", R"({"city":"San Francisco","units":"C"})")}), 1, 1, 1},
      {"a missing argument equals an expected null",
       request({call("get_weather", R"({"town":"x"})")},
               R"({"name":"get_weather","arguments":{"city":null}})"),
       1, 0, 1},
      {"expected arguments that are falsy match any call of that name",
       request({call("get_weather", "7")}, R"({"name":"get_weather","arguments":[]})"), 1, 0, 1},
      {"an empty expected call never matches", request({sf_call()}, "{}"), 0, 1, 1},
      {"no expected_call at all", request({sf_call()}, ""), 0, 1, 1},
      {"Python equality",
       request({call("get_weather", R"({"city":1.0})")},
               R"({"name":"get_weather","arguments":{"city":true}})"),
       1, 1, 1},
      {"an unknown tool requires nothing", request({call("get_time", R"({"zone":"UTC"})")}), 0, 1,
       1},
      {"a required string is walked by characters",
       request({sf_call()}, kExpected,
               R"([{"type":"function","name":"get_weather","parameters":{"required":"city"}}])"),
       1, 0, 1},
      {"the first tool of that name decides",
       request({sf_call()}, kExpected,
               R"([{"type":"function","name":"get_weather","parameters":{}},)"
               R"({"type":"function","name":"get_weather","parameters":{"required":["x"]}}])"),
       1, 1, 1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto res = post("/verify", c.body);
    ASSERT_EQ(res.status, 200) << res.body;
    auto out = json::parse(res.body).as_object();
    json::object components{
        {"correctness", c.correctness}, {"schema_valid", c.schema_valid}, {"format", c.format}};
    EXPECT_EQ(gym::core::render_json(out.at("reward_components")),
              gym::core::render_json(components));
    EXPECT_EQ(out.at("correctness").as_double(), c.correctness);
    EXPECT_EQ(out.at("schema_valid").as_double(), c.schema_valid);
    EXPECT_EQ(out.at("format").as_double(), c.format);
    EXPECT_EQ(out.at("reward").as_double(), c.correctness + c.schema_valid + c.format);
  }
}

TEST_F(MultiReward, SameTotalDifferentComposition) {
  // upstream test_same_total_different_composition: what GRPO collapses and GDPO keeps apart.
  auto wrong_city =
      json::parse(post("/verify", request({call("get_weather", R"({"city": "New York"})")})).body);
  auto extra_text =
      json::parse(post("/verify", request({sf_call(), assistant_text("Done.")})).body);
  EXPECT_EQ(wrong_city.at("reward"), 2.0);
  EXPECT_EQ(extra_text.at("reward"), 2.0);
  EXPECT_NE(wrong_city.at("reward_components"), extra_text.at("reward_components"));
}

TEST_F(MultiReward, EchoAndPredictedCalls) {
  auto res = post("/verify", request({call("get_weather", R"({"city": "Oslo"})"),
                                      call("get_weather", R"(["Oslo"])")}));
  ASSERT_EQ(res.status, 200) << res.body;
  auto out = json::parse(res.body).as_object();
  std::vector<std::string> keys;
  for (const auto& kv : out) keys.emplace_back(kv.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"responses_create_params", "response", "reward",
                                            "reward_components", "correctness", "schema_valid",
                                            "format", "predicted_calls"}));
  EXPECT_EQ(gym::core::render_json(out.at("predicted_calls")),
            R"([{"name":"get_weather","arguments":{"city":"Oslo"}},)"
            R"({"name":"get_weather","arguments":{}}])");
  EXPECT_EQ(gym::core::render_json(out.at("reward")), "1.0");
}

TEST_F(MultiReward, FailsWhereUpstreamFails) {
  // A tool of the call's name with null parameters: None.get raises.
  auto res =
      post("/verify", request({sf_call()}, kExpected,
                              R"([{"type":"function","name":"get_weather","parameters":null}])"));
  EXPECT_EQ(res.status, 500);
  EXPECT_EQ(res.body, R"("AttributeError: 'NoneType' object has no attribute 'get'")");
  // Expected arguments given as a JSON string, reached once the names match.
  res = post("/verify",
             request({sf_call()}, R"({"name":"get_weather","arguments":"{\"city\":\"x\"}"})"));
  EXPECT_EQ(res.status, 500);
  EXPECT_EQ(res.body, R"("AttributeError: 'str' object has no attribute 'items'")");
  // ... but not when no call has that name.
  EXPECT_EQ(post("/verify", request({sf_call()}, R"({"name":"other","arguments":"x"})")).status,
            200);
  // A required list holding a list: `[...] in dict` cannot hash it.
  res = post(
      "/verify",
      request(
          {sf_call()}, kExpected,
          R"([{"type":"function","name":"get_weather","parameters":{"required":[["city"]]}}])"));
  EXPECT_EQ(res.status, 500);
  EXPECT_EQ(res.body, R"("TypeError: unhashable type: 'list'")");
  // expected_call must be an object.
  res = post("/verify", request({sf_call()}, "null"));
  EXPECT_EQ(res.status, 422);
  EXPECT_EQ(json::parse(res.body).at("detail").at(0).at("type"), "dict_type");
}

TEST_F(MultiReward, WeatherToolAndBaseRoutes) {
  EXPECT_EQ(routes_.impl().class_name, "ToolCallMultiRewardResourcesServer");
  auto res = post("/get_weather", R"({"city":"Lagos","extra":1})");
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.body, R"({"city":"Lagos","weather_description":"The weather in Lagos is sunny."})");
  EXPECT_EQ(post("/get_weather", R"({"town":"Lagos"})").status, 422);
  EXPECT_EQ(routes_.call(Method::get, "/reverify_mode").body, R"("unknown")");
  // Default aggregate metrics: every component is a top-level number.
  res = post("/aggregate_metrics",
             R"({"verify_responses":[{"reward":2.0,"reward_components":{"correctness":1.0},)"
             R"("correctness":1.0,"schema_valid":1.0,"format":0.0}]})");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(
      gym::core::render_json(json::parse(res.body).at("key_metrics")),
      R"({"mean/reward":2.0,"mean/correctness":1.0,"mean/schema_valid":1.0,"mean/format":0.0})");
}
