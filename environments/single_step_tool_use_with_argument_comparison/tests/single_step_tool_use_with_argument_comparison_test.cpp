// single_step_tool_use_with_argument_comparison: upstream's tests (tests/test_app.py,
// tests/common/test_verification_utils.py, tests/common/test_response_utils.py) restated as
// verify requests, plus the Python behaviour of upstream's comparator where they stop.
#include "builtin_environments.h"
#include "core/config_error.h"
#include "environment_routes.h"
#include "files.h"
#include "http/router.h"
#include "servers/registry.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace json = boost::json;
using gym::http::Method;

namespace {

constexpr const char* kEnv = "single_step_tool_use_with_argument_comparison";

// The environment's routes, as a resources server instance serves them.
class StepServer {
 public:
  explicit StepServer(const json::object& instance_config)
      : routes_(gym::environments::single_step_tool_use_with_argument_comparison_environment(),
                instance_config) {}
  const gym::servers::Implementation* impl() const { return &routes_.impl(); }
  gym::http::Response verify(const std::string& body) const {
    return routes_.post("/verify", body);
  }

 private:
  gym::test::EnvironmentRoutes routes_;
};

// Upstream's test helper `build_comparator`: threshold 0.1 unless overridden, plus overrides.
const StepServer& server(const std::string& overrides = "{}") {
  static std::map<std::string, std::unique_ptr<StepServer>> servers;
  auto& slot = servers[overrides];
  if (!slot) {
    json::object comparator{{"word_count_similarity_threshold", 0.1}};
    json::value parsed = json::parse(overrides);
    for (const auto& kv : parsed.as_object()) comparator[kv.key()] = kv.value();
    slot = std::make_unique<StepServer>(json::object{{"tool_call_comparator_config", comparator}});
  }
  return *slot;
}

// ---- building requests -------------------------------------------------------------------------

std::string args_of(const json::value& v) { return json::serialize(v); }

json::object fc(const std::string& name, const std::string& arguments) {
  return {{"type", "function_call"}, {"name", name}, {"arguments", arguments}};
}
// Upstream's `call(query, name="search")`.
json::object search(const std::string& query, const std::string& name = "search") {
  return fc(name, args_of(json::object{{"query", query}}));
}
json::object batch(std::vector<json::object> calls) {
  json::array a;
  for (auto& c : calls) a.push_back(std::move(c));
  return {{"type", "function_call_batch"}, {"calls", std::move(a)}};
}
json::object message_action(const std::string& content) {
  return {{"type", "message"}, {"content", content}};
}

// Response output items.
json::object tool_call(const json::object& call, int index = 0) {
  json::object o = call;
  o["call_id"] = "call_" + std::to_string(index);
  return o;
}
json::array calls_of(const json::object& action) {
  json::array out;
  if (action.at("type") == "function_call") {
    out.push_back(tool_call(action));
    return out;
  }
  int i = 0;
  for (const auto& c : action.at("calls").as_array()) out.push_back(tool_call(c.as_object(), i++));
  return out;
}
json::object text_message(const std::string& text) {
  json::object part{{"type", "output_text"}, {"text", text}, {"annotations", json::array{}}};
  return {{"type", "message"},
          {"id", "msg"},
          {"role", "assistant"},
          {"status", "completed"},
          {"content", json::array{part}}};
}
json::object refusal_message() {
  json::object part{{"type", "refusal"}, {"refusal", "this is a refusal"}};
  return {{"type", "message"},
          {"id", "refusal"},
          {"role", "assistant"},
          {"content", json::array{part}}};
}
json::object reasoning() {
  json::object summary{{"type", "summary_text"}, {"text", "this is reasoning"}};
  return {{"type", "reasoning"}, {"id", "rs"}, {"summary", json::array{summary}}};
}

std::string verify_body(const json::value& expected_action, const json::array& output) {
  json::object body{
      {"responses_create_params",
       json::object{{"input", json::array{json::object{{"role", "user"}, {"content", "Hi."}}}}}},
      {"response", json::object{{"id", "resp"},
                                {"created_at", 1001},
                                {"model", "test_model"},
                                {"object", "response"},
                                {"output", output},
                                {"parallel_tool_calls", true},
                                {"tool_choice", "auto"},
                                {"tools", json::array{}}}},
      {"expected_action", expected_action}};
  return json::serialize(body);
}

// ---- categories (StepRewardCategory values) ----------------------------------------------------

const std::string kNoAction = "No tool call or chat message was found in the response";
const std::string kNoToolCall = "No tool call was found when one was expected";
const std::string kMessageFound = "A chat message was found as expected";
const std::string kNoMessage = "A tool call was executed when a chat message was expected";
const std::string kUnexpectedTool = "The tool in a tool call is not the expected tool";
const std::string kDecodeError =
    "An error occurred when decoding the arguments string in a tool call as a JSON object";
const std::string kTypeDifferent =
    "The type of an argument value in a tool call is different than the expected type";
const std::string kKeysDifferent =
    "The keys in an object in an argument value in a tool call are different than the keys in "
    "the expected object";
const std::string kLengthDifferent =
    "A list in an argument value in a tool call has a different length than the expected list";
const std::string kValueDifferent =
    "An argument value in a tool call is different than the expected value";
const std::string kToolCall = "A tool call that matches the expected tool call was found";
const std::string kBatchLength = "The number of tool calls in a batch is different than expected";
const std::string kBatch = "A tool-call batch that matches the expected tool calls was found";

struct Case {
  std::string name;
  std::string config;  // comparator overrides
  json::object expected;
  json::array output;
  double reward;
  std::string category;
};

// A batch of `n` junk search calls appended to `calls`.
std::vector<json::object> with_junk(std::vector<json::object> calls, int n) {
  for (int i = 0; i < n; ++i) calls.push_back(search("junk" + std::to_string(i)));
  return calls;
}

const json::object kSendArguments =
    json::parse(
        R"({"first":"one","second":2,"third":true,"fourth":[1,"element2"],
        "fifth":{"inner1":"value1","inner2":false}})")
        .as_object();

json::object send_with(const char* key, const char* value_json) {
  json::object args = kSendArguments;
  args[key] = json::parse(value_json);
  return fc("send", args_of(args));
}

// compare_tool_call_arguments(expected, actual), as the argument `v` of one call.
Case arguments_case(const std::string& name, const char* expected, const char* actual,
                    const std::string& category, const std::string& config = "{}") {
  // As text: the values may be Python-only JSON such as NaN.
  auto wrap = [](const char* v) { return std::string(R"({"v": )") + v + "}"; };
  return {name,
          config,
          fc("f", wrap(expected)),
          json::array{tool_call(fc("f", wrap(actual)))},
          category == kToolCall ? 1.0 : 0.0,
          category};
}

const std::string kOn = R"({"parallel_tool_call_rewarding":true})";
std::string on_with(const std::string& more) {
  return R"({"parallel_tool_call_rewarding":true,)" + more + "}";
}

std::vector<Case> cases() {
  const json::object alpha = search("alpha");
  const json::object beta = search("beta");
  const json::object gamma = search("gamma");
  const json::object send = fc("send", args_of(kSendArguments));
  std::vector<Case> c;
  auto add = [&](std::string name, std::string config, json::object expected, json::array output,
                 double reward, std::string category) {
    c.push_back({std::move(name), std::move(config), std::move(expected), std::move(output), reward,
                 std::move(category)});
  };
  auto calls = [](std::vector<json::object> v) { return calls_of(batch(std::move(v))); };

  // test_compare_tool_call
  add("other_tool", kOn, send, calls({fc("receive", args_of(kSendArguments))}), 0, kUnexpectedTool);
  add("arguments_not_json", kOn, send, calls({fc("send", "first=one")}), 0, kDecodeError);
  add("same_call", kOn, send, calls({send}), 1, kToolCall);
  add("list_element_differs", kOn, send, calls({send_with("fourth", R"([1,"element3"])")}), 0,
      kValueDifferent);
  add("object_keys_differ", kOn, send,
      calls({send_with("fifth", R"({"inner":"value1","inner2":false})")}), 0, kKeysDifferent);
  add("list_length_differs", kOn, send, calls({send_with("fourth", "[1]")}), 0, kLengthDifferent);

  // test_compare_action_dispatches_on_expected_type
  add("message_for_message", kOn, message_action("This is a message."),
      {text_message("A completely different message.")}, 1, kMessageFound);
  add("call_for_message", kOn, message_action("This is a message."), calls({alpha}), 0, kNoMessage);
  add("message_for_call", kOn, alpha, {text_message("hi")}, 0, kNoToolCall);
  add("message_for_batch", kOn, batch({alpha, beta}), {text_message("hi")}, 0, kNoToolCall);
  add("call_for_call", kOn, alpha, calls({alpha}), 1, kToolCall);

  // test_compare_tool_calls_ignores_tool_call_order, ..._rejects_mismatched_counts_by_default
  add("order_ignored", kOn, batch({alpha, beta}), calls({beta, alpha}), 1, kBatch);
  add("too_many_rejected", kOn, batch({alpha, beta}), calls({alpha, beta, gamma}), 0, kBatchLength);
  add("too_few_rejected", kOn, batch({alpha, beta}), calls({alpha}), 0, kBatchLength);

  // test_rewarding_off_ignores_the_call_count (the shipped default)
  for (int surplus = 1; surplus <= 3; ++surplus)
    add("off_surplus_" + std::to_string(surplus), "{}", alpha, calls(with_junk({alpha}, surplus)),
        1, kToolCall);
  add("off_expected_call_second", "{}", alpha, calls({search("junk"), alpha}), 1, kToolCall);
  add("off_batch_with_extra", "{}", batch({alpha, beta}), calls({beta, alpha, search("junk")}), 1,
      kBatch);
  add("off_batch_missing_one", "{}", batch({alpha, beta}), calls({alpha, search("junk")}), 0,
      kValueDifferent);
  add("off_f1_not_consulted", R"({"parallel_tool_call_reward_mode":"f1"})", alpha,
      calls({alpha, search("j1"), search("j2")}), 1, kToolCall);
  add("off_call_still_needed", "{}", alpha, calls({search("junk"), search("other")}), 0,
      kValueDifferent);
  add("off_message_for_call", "{}", alpha, {text_message("hi")}, 0, kNoToolCall);

  // test_rewarding_on_constrains_the_call_count
  add("on_surplus_call", kOn, alpha, calls({alpha, search("junk")}), 0, kBatchLength);
  add("on_surplus_batch_of_one", kOn, batch({alpha}), calls({alpha, search("junk")}), 0,
      kBatchLength);

  // test_f1_charges_for_surplus_when_rewarding_is_on: 2 * 1 / (1 + 3)
  add("f1_superset", on_with(R"("allow_superset":true,"parallel_tool_call_reward_mode":"f1")"),
      alpha, calls({alpha, search("j1"), search("j2")}), 0.5, kBatchLength);

  // test_cardinality_gate_admits_only_configured_shapes, for every reward mode
  for (std::string mode : {"binary_strict", "fractional", "f1"}) {
    std::string m = R"("parallel_tool_call_reward_mode":")" + mode + "\"";
    double few = mode == "f1" ? 2.0 / 3.0 : 1.0;
    double many = mode == "f1" ? 4.0 / 5.0 : 1.0;
    auto few_category = mode == "f1" ? kBatchLength : kBatch;
    add("subset_few_" + mode, on_with(R"("allow_subset":true,)" + m), batch({alpha, beta}),
        calls({alpha}), few, few_category);
    add("subset_many_" + mode, on_with(R"("allow_subset":true,)" + m), batch({alpha, beta}),
        calls({alpha, beta, gamma}), 0, kBatchLength);
    add("superset_many_" + mode, on_with(R"("allow_superset":true,)" + m), batch({alpha, beta}),
        calls({alpha, beta, gamma}), many, few_category);
    add("superset_few_" + mode, on_with(R"("allow_superset":true,)" + m), batch({alpha, beta}),
        calls({alpha}), 0, kBatchLength);
    add("permissive_few_" + mode, on_with(R"("allow_subset":true,"allow_superset":true,)" + m),
        batch({alpha, beta}), calls({alpha}), few, few_category);
    add("permissive_many_" + mode, on_with(R"("allow_subset":true,"allow_superset":true,)" + m),
        batch({alpha, beta}), calls({alpha, beta, gamma}), many, few_category);
  }

  // test_gated_shapes_get_full_credit_without_f1: 20 junk calls cost nothing
  for (std::string mode : {"binary_strict", "fractional"}) {
    std::string m = R"("parallel_tool_call_reward_mode":")" + mode + "\"";
    add("spam_" + mode, on_with(R"("allow_superset":true,)" + m), batch({alpha, beta}),
        calls(with_junk({alpha, beta}, 20)), 1, kBatch);
  }

  // test_fractional_scores_the_matched_share_of_required_calls
  for (int matched = 0; matched <= 3; ++matched) {
    std::vector<json::object> actual;
    const char* queries[] = {"alpha", "beta", "gamma"};
    for (int i = 0; i < matched; ++i) actual.push_back(search(queries[i]));
    for (int i = 0; i < 3 - matched; ++i) actual.push_back(search("wrong" + std::to_string(i)));
    add("fractional_" + std::to_string(matched),
        on_with(R"("parallel_tool_call_reward_mode":"fractional")"), batch({alpha, beta, gamma}),
        calls(actual), matched / 3.0, matched == 3 ? kBatch : kValueDifferent);
  }

  // test_f1_rewards_only_an_exact_set_of_calls
  const std::string f1 = R"("parallel_tool_call_reward_mode":"f1")";
  add("f1_exact", on_with(f1), batch({alpha, beta}), calls({beta, alpha}), 1, kBatch);
  add("f1_half_right", on_with(f1), batch({alpha, beta}), calls({alpha, search("wrong")}), 0.5,
      kValueDifferent);
  add("f1_undercalling", on_with(R"("allow_subset":true,)" + f1), batch({alpha, beta}),
      calls({alpha}), 2.0 / 3.0, kBatchLength);
  add("f1_spamming", on_with(R"("allow_superset":true,)" + f1), batch({alpha, beta}),
      calls(with_junk({alpha, beta}, 20)), 1.0 / 6.0, kBatchLength);

  // test_failure_category_describes_an_unmatched_call
  add("unmatched_other_tool", kOn, batch({alpha, search("beta", "lookup")}),
      calls({alpha, search("beta", "other")}), 0, kUnexpectedTool);
  add("unmatched_wrong_argument", kOn, batch({alpha, search("beta", "lookup")}),
      calls({alpha, search("wrong", "lookup")}), 0, kValueDifferent);

  // test_matching_survives_a_fuzzy_non_transitive_relation
  add("augmenting_path", on_with(R"("word_count_similarity_threshold":0.3)"),
      batch({search("aa bb cc dd"), search("aa bb")}), calls({search("aa bb"), search("cc dd")}), 1,
      kBatch);

  // test_compare_tool_call_arguments
  c.push_back(arguments_case("none_vs_string", "null", R"("None")", kTypeDifferent));
  c.push_back(arguments_case("float_within_threshold", "1.0", "1.000000001", kToolCall));
  c.push_back(arguments_case("float_differs", "1.0", "2.0", kValueDifferent));
  c.push_back(arguments_case("word_equal", R"("one")", R"("one")", kToolCall));
  c.push_back(arguments_case("word_differs", R"("one")", R"("two")", kValueDifferent));
  c.push_back(arguments_case("words_equal", R"("one two three")", R"("one two three")", kToolCall));
  c.push_back(
      arguments_case("words_differ", R"("one two three")", R"("four five six")", kValueDifferent));
  c.push_back(arguments_case("true_true", "true", "true", kToolCall));
  c.push_back(arguments_case("int_differs", "1", "2", kValueDifferent));
  // Beyond upstream's tests: isinstance(actual, type(expected)), so a bool passes for an int
  // but an int does not pass for a float; string similarity is common / (both totals), so
  // identical strings score only 0.5; one-word strings compare exactly (case included).
  c.push_back(arguments_case("bool_for_int", "1", "true", kToolCall));
  c.push_back(arguments_case("int_for_bool", "true", "1", kTypeDifferent));
  c.push_back(arguments_case("int_for_float", "75.0", "75", kTypeDifferent));
  c.push_back(arguments_case("float_for_int", "75", "75.0", kTypeDifferent));
  c.push_back(arguments_case("nan_differs", "NaN", "NaN", kValueDifferent));
  c.push_back(arguments_case("one_word_case", R"("Paris")", R"("paris")", kValueDifferent));
  c.push_back(
      arguments_case("words_case_and_spaces", R"("Hello  World ")", R"("hello world")", kToolCall));
  c.push_back(arguments_case("identical_words_below_threshold", R"("one two")", R"("one two")",
                             kValueDifferent, R"({"word_count_similarity_threshold":0.6})"));
  c.push_back(arguments_case("nested_first_difference", R"({"a":[1,{"b":"x"}],"c":1})",
                             R"({"c":"1","a":[1,{"b":1}]})", kTypeDifferent));

  // test_response_utils: what counts as the response's action
  add("empty_output", "{}", alpha, {}, 0, kNoAction);
  add("reasoning_only", "{}", alpha, {reasoning()}, 0, kNoAction);
  add("refusal_is_no_text", "{}", message_action("x"), {reasoning(), refusal_message()}, 0,
      kNoAction);
  add("refusal_then_text", "{}", message_action("x"), {refusal_message(), text_message("t")}, 1,
      kMessageFound);
  json::object respond = fc("respond", "{}");
  add("tool_call_only", "{}", respond, {tool_call(respond)}, 1, kToolCall);
  add("text_then_tool_call", "{}", respond, {text_message("t"), tool_call(respond)}, 1, kToolCall);
  add("tool_call_then_text", "{}", respond, {tool_call(respond), text_message("t")}, 1, kToolCall);
  json::object lookup = fc("lookup", R"({"query": "alpha"})");
  add("calls_become_a_batch", kOn, batch({respond, lookup}),
      {text_message("t"), tool_call(respond, 0), tool_call(lookup, 1)}, 1, kBatch);
  // The calls of every turn count (simple_agent appends the tool outputs in between).
  json::object not_found{{"type", "function_call_output"},
                         {"call_id", "call_0"},
                         {"output", R"({"detail":"Not Found"})"}};
  add("tool_outputs_ignored", "{}", respond, {tool_call(respond), not_found}, 1, kToolCall);

  // test_app.py test_verify: set_metric_count(metric_name="views", metric_count=75)
  json::object metric = fc("set_metric_count", R"({"metric_name": "views", "metric_count": 75})");
  add("app_no_output", "{}", metric, {reasoning()}, 0, kNoAction);
  add("app_string_count", "{}", metric,
      {tool_call(fc("set_metric_count", R"({"metric_name": "views", "metric_count": "75"})"))}, 0,
      kTypeDifferent);
  add("app_matching", "{}", metric, {tool_call(metric)}, 1, kToolCall);
  add("app_chat_instead_of_tool", "{}", metric, {text_message("How can I help you?")}, 0,
      kNoToolCall);
  add("app_different_chat_message", "{}", message_action("This is a message."),
      {text_message("How can I help you?")}, 1, kMessageFound);
  add("app_tool_instead_of_chat", "{}", message_action("This is a message."), {tool_call(metric)},
      0, kNoMessage);

  // test_verify_parallel_tool_calls and ..._with_f1_reward_mode
  for (const std::string& config : {std::string("{}"), kOn})
    add("app_parallel_reordered_" + std::string(config == "{}" ? "off" : "on"), config,
        batch({alpha, beta}), calls({beta, alpha}), 1, kBatch);
  add("app_parallel_surplus_off", "{}", batch({alpha, beta}), calls({alpha, beta, gamma}), 1,
      kBatch);
  add("app_parallel_surplus_on", kOn, batch({alpha, beta}), calls({alpha, beta, gamma}), 0,
      kBatchLength);
  const std::string permissive_f1 =
      on_with(R"("allow_subset":true,"allow_superset":true,"parallel_tool_call_reward_mode":"f1")");
  add("app_f1_reordered", permissive_f1, batch({alpha, beta}), calls({beta, alpha}), 1, kBatch);
  add("app_f1_junk", permissive_f1, batch({alpha, beta}),
      calls({alpha, beta, search("x"), search("y"), search("z")}), 4.0 / 7.0, kBatchLength);
  return c;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class StepVerify : public ::testing::TestWithParam<Case> {};

TEST_P(StepVerify, RewardAndCategoryAsUpstream) {
  const Case& c = GetParam();
  auto r = server(c.config).verify(verify_body(c.expected, c.output));
  ASSERT_EQ(r.status, 200) << r.body;
  auto o = json::parse(r.body).as_object();
  EXPECT_EQ(o.at("reward").as_double(), c.reward);
  EXPECT_EQ(o.at("category"), json::value(c.category));
  // Echo: the base fields, then the expected action as validated, then the category.
  std::vector<std::string> keys;
  for (const auto& kv : o) keys.emplace_back(kv.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"responses_create_params", "response", "reward",
                                            "expected_action", "category"}));
  EXPECT_EQ(o.at("expected_action"), json::value(c.expected));
}

INSTANTIATE_TEST_SUITE_P(Upstream, StepVerify, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

TEST(StepVerifyErrors, ExpectedArgumentsMustBeJsonOnlyWhenTheNamesMatch) {
  auto expected = fc("respond", "");  // json.loads("") raises, upstream does not catch it
  auto r = server().verify(verify_body(expected, json::array{tool_call(fc("respond", "{}"))}));
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, R"x("JSONDecodeError: Expecting value: line 1 column 1 (char 0)")x");
  r = server().verify(verify_body(expected, json::array{tool_call(fc("other", "{}"))}));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body).at("category"), json::value(kUnexpectedTool));
}

TEST(StepVerifyErrors, StringContentOfAnAssistantMessageRaises) {
  json::object msg{{"type", "message"}, {"role", "assistant"}, {"content", "plain text"}};
  auto r = server().verify(verify_body(message_action("x"), json::array{msg}));
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, R"("AttributeError: 'str' object has no attribute 'type'")");
}

TEST(StepVerifyErrors, ExpectedActionIsADiscriminatedUnion) {
  auto detail = [](const gym::http::Response& r) {
    EXPECT_EQ(r.status, 422) << r.body;
    return json::parse(r.body).at("detail").as_array();
  };
  auto d = detail(server().verify(verify_body(json::object{{"name", "f"}}, {})));
  EXPECT_EQ(d.at(0).at("type"), "union_tag_not_found");
  EXPECT_EQ(d.at(0).at("loc"), json::parse(R"(["body","expected_action"])"));
  d = detail(server().verify(verify_body(json::object{{"type", "tool"}}, {})));
  EXPECT_EQ(d.at(0).at("type"), "union_tag_invalid");
  EXPECT_EQ(d.at(0).at("msg"),
            "Input tag 'tool' found using 'type' does not match any of the expected tags: "
            "'message', 'function_call', 'function_call_batch'");
  d = detail(
      server().verify(verify_body(json::object{{"type", "function_call"}, {"name", 5}}, {})));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d.at(0).at("loc"), json::parse(R"(["body","expected_action","function_call","name"])"));
  EXPECT_EQ(d.at(0).at("type"), "string_type");
  EXPECT_EQ(d.at(1).at("type"), "missing");
  d = detail(server().verify(verify_body(batch({}), {})));
  EXPECT_EQ(d.at(0).at("type"), "too_short");
  d = detail(server().verify(verify_body(
      json::object{{"type", "function_call_batch"},
                   {"calls", json::array{json::object{{"name", "f"}, {"arguments", "{}"}}}}},
      {})));
  EXPECT_EQ(d.at(0).at("loc"),
            json::parse(R"(["body","expected_action","function_call_batch","calls",0,"type"])"));
  auto r = server().verify(R"({"responses_create_params":{"input":"x"},"response":{"output":[]}})");
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(json::parse(r.body).at("detail").at(0).at("loc"),
            json::parse(R"(["body","expected_action"])"));
}

TEST(StepVerifyEcho, ExpectedActionIsEchoedAsItsModelDumps) {
  json::object expected{
      {"arguments", "{}"}, {"name", "f"}, {"type", "function_call"}, {"note", "dropped"}};
  auto r = server().verify(verify_body(expected, json::array{tool_call(fc("f", "{}"))}));
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(
      r.body.find(R"("expected_action":{"type":"function_call","name":"f","arguments":"{}"},)"
                  R"("category":"A tool call that matches the expected tool call was found"})"),
      std::string::npos)
      << r.body;
}

TEST(StepConfig, TheComparatorConfigIsRequiredAndChecked) {
  EXPECT_THROW(StepServer(json::object{}), gym::core::ConfigError);
  EXPECT_THROW(StepServer(json::object{{"tool_call_comparator_config", json::object{}}}),
               gym::core::ConfigError);
  EXPECT_THROW(StepServer(json::parse(R"({"tool_call_comparator_config":{)"
                                      R"("word_count_similarity_threshold":0.1,)"
                                      R"("parallel_tool_call_reward_mode":"recall"}})")
                              .as_object()),
               gym::core::ConfigError);
  EXPECT_EQ(server().impl()->class_name, "SingleStepToolUseArgumentComparisonResourcesServer");
}

// ---- this folder's example data --------------------------------------------------------------

// data/example_rollouts.jsonl (recorded through gym eval run with the replay model) verifies to
// its recorded rewards when each row is sent with its example.jsonl row.
TEST(StepExampleData, OwnExampleRolloutsKeepTheirRewards) {
  const auto dir = std::filesystem::path(GYM_SOURCE_ROOT) / "environments" /
                   "single_step_tool_use_with_argument_comparison" / "data";
  const auto inputs = gym::test::read_jsonl(dir / "example.jsonl");
  const auto rollouts = gym::test::read_jsonl(dir / "example_rollouts.jsonl");
  ASSERT_EQ(inputs.size(), 5u);
  ASSERT_EQ(rollouts.size(), 5u);
  const std::vector<double> expected{1, 1, 0, 1, 0};
  for (std::size_t line = 0; line < rollouts.size(); ++line) {
    const auto& rollout = rollouts[line];
    auto task = static_cast<std::size_t>(rollout.at("_ng_task_index").to_number<std::int64_t>());
    ASSERT_EQ(task, line);  // sorted by task index
    json::object request = inputs.at(task);
    request["responses_create_params"] = rollout.at("responses_create_params");
    request["response"] = rollout.at("response");
    auto r = server().verify(json::serialize(request));
    ASSERT_EQ(r.status, 200) << r.body;
    auto o = json::parse(r.body).as_object();
    EXPECT_EQ(o.at("reward"), rollout.at("reward")) << "task " << task;
    EXPECT_EQ(o.at("reward").as_double(), expected[task]) << "task " << task;
    EXPECT_EQ(o.at("category"), rollout.at("category")) << "task " << task;
  }
}

}  // namespace
