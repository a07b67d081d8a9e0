// The replay algorithm (docs/reference/replay-model.md) without a server: input normalisation,
// candidates, continuations, segments, envelopes, failures, bindings.
#include "models/replay_store.h"
#include "models/session_bindings.h"
#include "python_compat/json_equal.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace json = boost::json;
using gym::models::ReplayAnswer;
using gym::models::ReplayStore;
using gym::models::SessionBindings;
using gym::models::ToolOutputCheck;

namespace {

constexpr const char* kUser = R"({"role":"user","content":"weather?","type":"message"})";
constexpr const char* kReasoning =
    R"({"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}]})";
constexpr const char* kCall1 =
    R"({"type":"function_call","call_id":"c1","name":"get","arguments":"{\"city\": \"SF\"}",)"
    R"("id":"c1","status":"completed"})";
constexpr const char* kCall2 =
    R"({"type":"function_call","call_id":"c2","name":"get","arguments":"{\"city\": \"LA\"}"})";
constexpr const char* kOut1 =
    R"({"type":"function_call_output","call_id":"c1","output":"{\"temp\": 1.0}","id":null,)"
    R"("status":null})";
constexpr const char* kOut2 =
    R"({"type":"function_call_output","call_id":"c2","output":"{\"temp\": 2}","id":null,)"
    R"("status":null})";
constexpr const char* kFinal =
    R"({"id":"msg_1","type":"message","role":"assistant","status":"completed",)"
    R"("content":[{"type":"output_text","text":"cold","annotations":[]}]})";
constexpr const char* kUsage =
    R"({"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,)"
    R"("output_tokens_details":{"reasoning_tokens":0},"total_tokens":15})";

constexpr const char* kAnswerA =
    R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"A"}]})";
constexpr const char* kAnswerB =
    R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"B"}]})";

json::array items(std::initializer_list<const char*> texts) {
  json::array out;
  for (const char* t : texts) out.push_back(json::parse(t));
  return out;
}

json::object row(json::array input, json::array output, const char* id = "resp_1") {
  json::object params;
  params["input"] = std::move(input);
  json::object response;
  if (id) response["id"] = id;
  response["created_at"] = 1.5;
  response["model"] = "recorded-model";
  response["object"] = "response";
  response["output"] = std::move(output);
  response["parallel_tool_calls"] = true;
  response["tool_choice"] = "auto";
  response["tools"] = json::array{};
  response["status"] = "completed";
  response["incomplete_details"] = nullptr;
  response["usage"] = json::parse(kUsage);
  json::object r;
  r["responses_create_params"] = std::move(params);
  r["response"] = std::move(response);
  r["reward"] = 1.0;
  return r;
}

// The example.jsonl form of the input: no "type":"message".
json::array user_input(const char* text = "weather?") {
  json::object m;
  m["role"] = "user";
  m["content"] = text;
  return json::array{m};
}

json::object params_with(json::array input) {
  json::object p;
  p["input"] = std::move(input);
  return p;
}

json::array append(json::array a, const json::array& b) {
  for (const auto& v : b) a.push_back(v);
  return a;
}

std::string detail_type(const ReplayAnswer& a) {
  return std::string(a.body.at("detail").at("type").as_string());
}

std::string detail_message(const ReplayAnswer& a) {
  return std::string(a.body.at("detail").at("message").as_string());
}

class ReplayStoreTest : public ::testing::Test {
 protected:
  ReplayStore multi_turn(ToolOutputCheck check) {
    ReplayStore store(check);
    EXPECT_TRUE(store.add_row(
        row(items({kUser}), items({kReasoning, kCall1, kCall2, kOut1, kOut2, kFinal})),
        "rollouts.jsonl", 1));
    return store;
  }
  // What simple_agent appends after the first turn, tool outputs rendered compactly.
  json::array second_turn_input() {
    json::array outs;
    outs.push_back(
        json::parse(R"({"type":"function_call_output","call_id":"c1","output":"{\"temp\":1}"})"));
    outs.push_back(
        json::parse(R"({"type":"function_call_output","call_id":"c2","output":"{\"temp\":2.0}"})"));
    return append(append(user_input(), items({kReasoning, kCall1, kCall2})), outs);
  }
};

}  // namespace

TEST(Normalize, StringInputBecomesOneUserMessage) {
  auto out = gym::models::normalize_input(json::value("hi"));
  EXPECT_EQ(json::serialize(out), R"([{"type":"message","role":"user","content":"hi"}])");
}

TEST(Normalize, MessagesGetTypeAndNullsAreDropped) {
  auto in = json::parse(R"([{"role":"user","content":"a","type":null},
                            {"type":"function_call_output","call_id":"c","output":"x","id":null,
                             "status":null},
                            {"role":"user","content":[{"type":"input_text","text":"t","x":null}]},
                            {"type":"reasoning","id":"r","summary":[]}])");
  auto out = gym::models::normalize_input(in);
  auto expected = json::parse(R"([{"role":"user","content":"a","type":"message"},
                                  {"type":"function_call_output","call_id":"c","output":"x"},
                                  {"role":"user","content":[{"type":"input_text","text":"t"}],
                                   "type":"message"},
                                  {"type":"reasoning","id":"r","summary":[]}])");
  EXPECT_TRUE(gym::python_compat::json_equal(out, expected, gym::python_compat::BoolRule::distinct))
      << json::serialize(out);
}

TEST(Normalize, OtherValuesGiveAnEmptyInput) {
  EXPECT_TRUE(gym::models::normalize_input(json::value(5)).empty());
}

TEST_F(ReplayStoreTest, ReplaysATrajectoryTurnByTurn) {
  auto store = multi_turn(ToolOutputCheck::semantic);
  auto first = store.answer(params_with(user_input()), "s1");
  ASSERT_EQ(first.status, 200) << json::serialize(first.body);
  EXPECT_EQ(first.body.at("output"), items({kReasoning, kCall1, kCall2}));
  EXPECT_EQ(first.body.at("id"), "resp_1_t1");
  EXPECT_TRUE(first.body.at("usage").is_null());
  EXPECT_EQ(first.body.at("status"), "completed");
  EXPECT_EQ(first.body.at("model"), "recorded-model");

  auto second = store.answer(params_with(second_turn_input()), "s1");
  ASSERT_EQ(second.status, 200) << json::serialize(second.body);
  EXPECT_EQ(second.body.at("output"), items({kFinal}));
  EXPECT_EQ(second.body.at("id"), "resp_1");
  EXPECT_EQ(second.body.at("usage"), json::parse(kUsage));
}

TEST_F(ReplayStoreTest, ExactToolOutputCheckRejectsReserialisedOutputs) {
  auto store = multi_turn(ToolOutputCheck::exact);
  ASSERT_EQ(store.answer(params_with(user_input()), "s").status, 200);
  auto second = store.answer(params_with(second_turn_input()), "s");
  EXPECT_EQ(second.status, 409);
  EXPECT_EQ(detail_type(second), "replay_diverged");
  EXPECT_NE(detail_message(second).find("'output' differs"), std::string::npos)
      << detail_message(second);
  EXPECT_NE(detail_message(second).find("rollouts.jsonl' line 1"), std::string::npos);
  // The recorded text itself passes.
  auto verbatim =
      append(append(user_input(), items({kReasoning, kCall1, kCall2})), items({kOut1, kOut2}));
  EXPECT_EQ(store.answer(params_with(verbatim), "s").status, 200);
}

TEST_F(ReplayStoreTest, OffIgnoresToolOutputsButNotCallIds) {
  auto store = multi_turn(ToolOutputCheck::off);
  auto input = append(append(user_input(), items({kReasoning, kCall1, kCall2})),
                      items({R"({"type":"function_call_output","call_id":"c1","output":"?"})",
                             R"({"type":"function_call_output","call_id":"c2","output":"!"})"}));
  EXPECT_EQ(store.answer(params_with(input), "s").status, 200);
  auto wrong_id = append(append(user_input(), items({kReasoning, kCall1, kCall2})),
                         items({R"({"type":"function_call_output","call_id":"c9","output":"?"})",
                                R"({"type":"function_call_output","call_id":"c2","output":"!"})"}));
  EXPECT_EQ(detail_type(store.answer(params_with(wrong_id), "s")), "replay_diverged");
}

TEST_F(ReplayStoreTest, SemanticCheckFallsBackToTextForNonJson) {
  ReplayStore store(ToolOutputCheck::semantic);
  ASSERT_TRUE(store.add_row(
      row(items({kUser}),
          items({kCall1, R"({"type":"function_call_output","call_id":"c1","output":"plain"})",
                 kFinal})),
      "f", 1));
  auto ok = append(append(user_input(), items({kCall1})),
                   items({R"({"type":"function_call_output","call_id":"c1","output":"plain"})"}));
  EXPECT_EQ(store.answer(params_with(ok), "s").status, 200);
  auto bad = append(append(user_input(), items({kCall1})),
                    items({R"({"type":"function_call_output","call_id":"c1","output":"plain "})"}));
  EXPECT_EQ(store.answer(params_with(bad), "s").status, 409);
}

TEST_F(ReplayStoreTest, DivergingCallsAndBoundariesAreNamed) {
  auto store = multi_turn(ToolOutputCheck::semantic);
  auto other_args = json::parse(kCall1);
  other_args.as_object()["arguments"] = R"({"city": "NYC"})";
  json::array input = user_input();
  input.push_back(json::parse(kReasoning));
  input.push_back(other_args);
  input.push_back(json::parse(kCall2));
  input.push_back(json::parse(kOut1));
  input.push_back(json::parse(kOut2));
  auto a = store.answer(params_with(input), "s");
  EXPECT_EQ(a.status, 409);
  EXPECT_EQ(detail_type(a), "replay_diverged");
  EXPECT_NE(detail_message(a).find("input item 2 ('function_call')"), std::string::npos)
      << detail_message(a);
  EXPECT_NE(detail_message(a).find("'arguments' differs"), std::string::npos);

  auto mid_turn = append(user_input(), items({kReasoning, kCall1, kCall2}));
  auto b = store.answer(params_with(mid_turn), "s");
  EXPECT_EQ(detail_type(b), "replay_diverged");
  EXPECT_NE(detail_message(b).find("turn boundary"), std::string::npos) << detail_message(b);

  auto half = append(user_input(), items({kReasoning, kCall1}));
  auto c = store.answer(params_with(half), "s");
  EXPECT_EQ(detail_type(c), "replay_diverged");
}

TEST_F(ReplayStoreTest, UnknownInputIsNoMatch) {
  auto store = multi_turn(ToolOutputCheck::semantic);
  auto a = store.answer(params_with(user_input("something else")), "s");
  EXPECT_EQ(a.status, 409);
  EXPECT_EQ(detail_type(a), "replay_no_match");
  EXPECT_NE(detail_message(a).find("something else"), std::string::npos) << detail_message(a);
}

TEST_F(ReplayStoreTest, StringInputMatchesAOneMessageRecording) {
  ReplayStore store(ToolOutputCheck::semantic);
  ASSERT_TRUE(store.add_row(row(items({kUser}), items({kFinal})), "f", 1));
  json::object params;
  params["input"] = "weather?";
  EXPECT_EQ(store.answer(params, "s").status, 200);
}

TEST_F(ReplayStoreTest, RowEndingWithAToolOutputIsExhausted) {
  ReplayStore store(ToolOutputCheck::semantic);
  ASSERT_TRUE(store.add_row(row(items({kUser}), items({kCall1, kOut1})), "f", 7));
  auto first = store.answer(params_with(user_input()), "s");
  ASSERT_EQ(first.status, 200);
  EXPECT_EQ(first.body.at("output"), items({kCall1}));
  EXPECT_EQ(first.body.at("id"), "resp_1_t1");
  auto second = store.answer(params_with(append(user_input(), items({kCall1, kOut1}))), "s");
  EXPECT_EQ(second.status, 409);
  EXPECT_EQ(detail_type(second), "replay_exhausted");
  EXPECT_NE(detail_message(second).find("'f' line 7"), std::string::npos);
}

TEST_F(ReplayStoreTest, LongerRecordedInputWinsWhenTheShorterDiverges) {
  ReplayStore store(ToolOutputCheck::semantic);
  ASSERT_TRUE(store.add_row(row(items({kUser}), items({kCall1, kOut1, kFinal}), "short"), "f", 1));
  auto longer_input = items({kUser, R"({"role":"user","content":"more","type":"message"})"});
  ASSERT_TRUE(store.add_row(row(longer_input, items({kFinal}), "long"), "f", 2));
  json::array request = user_input();
  request.push_back(json::parse(R"({"role":"user","content":"more"})"));
  auto a = store.answer(params_with(request), "s");
  ASSERT_EQ(a.status, 200) << json::serialize(a.body);
  EXPECT_EQ(a.body.at("id"), "long");
}

TEST_F(ReplayStoreTest, DuplicateInputsSpreadOverSessions) {
  ReplayStore store(ToolOutputCheck::semantic);
  ASSERT_TRUE(store.add_row(row(items({kUser}), items({kAnswerA}), "ra"), "f", 1));
  ASSERT_TRUE(store.add_row(row(items({kUser}), items({kAnswerB}), "rb"), "f", 2));
  EXPECT_EQ(store.answer(params_with(user_input()), "s1").body.at("id"), "ra");
  EXPECT_EQ(store.answer(params_with(user_input()), "s2").body.at("id"), "rb");
  EXPECT_EQ(store.answer(params_with(user_input()), "s1").body.at("id"), "ra");  // bound
  EXPECT_EQ(store.answer(params_with(user_input()), "s2").body.at("id"), "rb");  // bound
  EXPECT_EQ(store.answer(params_with(user_input()), "s3").body.at("id"), "ra");  // tie: file order
  EXPECT_EQ(store.answer(params_with(user_input()), "s4").body.at("id"), "rb");
}

TEST_F(ReplayStoreTest, BoundRowIsFollowedAcrossTurns) {
  ReplayStore store(ToolOutputCheck::off);
  // Two recordings share the first turn and differ in the final answer.
  ASSERT_TRUE(store.add_row(row(items({kUser}), items({kCall1, kOut1, kFinal}), "ra"), "f", 1));
  ASSERT_TRUE(store.add_row(row(items({kUser}), items({kCall1, kOut1, kAnswerB}), "rb"), "f", 2));
  EXPECT_EQ(store.answer(params_with(user_input()), "s1").body.at("id"), "ra_t1");
  EXPECT_EQ(store.answer(params_with(user_input()), "s2").body.at("id"), "rb_t1");
  auto turn2 = append(user_input(), items({kCall1, kOut1}));
  EXPECT_EQ(store.answer(params_with(turn2), "s2").body.at("id"), "rb");
  EXPECT_EQ(store.answer(params_with(turn2), "s1").body.at("id"), "ra");
}

TEST_F(ReplayStoreTest, IntermediateTurnsClearUsageAndIncompleteness) {
  ReplayStore store(ToolOutputCheck::semantic);
  auto r = row(items({kUser}), items({kCall1, kOut1, kFinal}));
  r["response"].as_object()["status"] = "incomplete";
  r["response"].as_object()["incomplete_details"] =
      json::parse(R"({"reason":"max_output_tokens"})");
  ASSERT_TRUE(store.add_row(r, "f", 1));
  auto first = store.answer(params_with(user_input()), "s");
  EXPECT_EQ(first.body.at("status"), "completed");
  EXPECT_TRUE(first.body.at("incomplete_details").is_null());
  auto last = store.answer(params_with(append(user_input(), items({kCall1, kOut1}))), "s");
  EXPECT_EQ(last.body.at("status"), "incomplete");
  EXPECT_EQ(last.body.at("incomplete_details").at("reason"), "max_output_tokens");
}

TEST_F(ReplayStoreTest, MissingEnvelopeFieldsAreFilled) {
  ReplayStore store(ToolOutputCheck::semantic);
  json::object r;
  r["responses_create_params"] = json::object{{"input", items({kUser})}};
  r["response"] = json::object{{"output", items({kFinal})}};
  ASSERT_TRUE(store.add_row(r, "f", 12));
  auto params = params_with(user_input());
  params["model"] = "my-model";
  params["tool_choice"] = "none";
  auto a = store.answer(params, "s");
  ASSERT_EQ(a.status, 200);
  EXPECT_EQ(a.body.at("id"), "resp_replay_12");
  EXPECT_TRUE(a.body.at("created_at").is_double());
  EXPECT_EQ(a.body.at("model"), "my-model");
  EXPECT_EQ(a.body.at("object"), "response");
  EXPECT_EQ(a.body.at("parallel_tool_calls"), json::value(true));
  EXPECT_EQ(a.body.at("tool_choice"), "none");
  EXPECT_EQ(a.body.at("tools"), json::array{});
  auto b = store.answer(params_with(user_input()), "s");
  EXPECT_EQ(b.body.at("model"), "replay_model");
}

TEST_F(ReplayStoreTest, UnusableRowsAreSkipped) {
  ReplayStore store(ToolOutputCheck::semantic);
  auto failed = row(items({kUser}), items({kFinal}));
  failed["_ng_failure_class"] = "agent_run_error";
  EXPECT_FALSE(store.add_row(failed, "f", 1));
  auto no_output = row(items({kUser}), items({}));
  no_output["response"].as_object().erase("output");
  EXPECT_FALSE(store.add_row(no_output, "f", 2));
  auto no_input = row(items({kUser}), items({kFinal}));
  no_input["responses_create_params"].as_object().erase("input");
  EXPECT_FALSE(store.add_row(no_input, "f", 3));
  EXPECT_EQ(store.size(), 0u);
}

TEST(SessionBindings, ExpireAfterInactivity) {
  using namespace std::chrono_literals;
  SessionBindings b(1h, 10);
  auto t0 = SessionBindings::Clock::time_point{};
  b.bind("a", 3, t0);
  EXPECT_EQ(b.find("a", t0 + 59min), 3u);
  EXPECT_EQ(b.find("a", t0 + 118min), 3u);  // the previous hit counted as activity
  EXPECT_FALSE(b.find("a", t0 + 179min).has_value());
  EXPECT_EQ(b.size(), 0u);
}

TEST(SessionBindings, EvictLeastRecentlyUsedBeyondCapacity) {
  using namespace std::chrono_literals;
  SessionBindings b(1h, 2);
  auto t = SessionBindings::Clock::time_point{};
  b.bind("a", 1, t);
  b.bind("b", 2, t + 1s);
  EXPECT_EQ(b.find("a", t + 2s), 1u);
  b.bind("c", 3, t + 3s);
  EXPECT_FALSE(b.find("b", t + 4s).has_value());
  EXPECT_EQ(b.find("a", t + 4s), 1u);
  EXPECT_EQ(b.find("c", t + 4s), 3u);
  b.bind("a", 5, t + 5s);  // rebind
  EXPECT_EQ(b.find("a", t + 6s), 5u);
  EXPECT_EQ(b.size(), 2u);
}
