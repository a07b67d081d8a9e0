// calendar: upstream's tests (tests/test_app.py: 23 schedules and their rewards) restated, plus
// the Python behaviour of upstream's grader where those tests stop (time parsing, event ids,
// duplicates, constraint texts) and of its text extraction (only the last output item counts).
// Rewards beyond upstream's tests were computed with upstream's utils.py under CPython 3.13.
#include "builtin_environments.h"
#include "environment_routes.h"
#include "files.h"
#include "http/router.h"
#include "servers/registry.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace json = boost::json;
using gym::http::Method;

namespace {

// The environment's routes, as a resources server instance serves them.
class CalendarServer {
 public:
  const gym::servers::Implementation* impl() const { return &routes_.impl(); }
  gym::http::Response verify(const std::string& body) const {
    return routes_.post("/verify", body);
  }

 private:
  gym::test::EnvironmentRoutes routes_{gym::environments::calendar_environment()};
};

const CalendarServer& server() {
  static const CalendarServer s;
  return s;
}

json::object assistant_message(const std::string& text) {
  json::object part{{"type", "output_text"}, {"text", text}, {"annotations", json::array{}}};
  return {{"type", "message"},
          {"id", "msg_test_1"},
          {"role", "assistant"},
          {"status", "completed"},
          {"content", json::array{part}}};
}

std::string verify_body(const json::array& output, const std::string& exp_cal_state) {
  json::object body{{"responses_create_params", json::object{{"input", json::array{}}}},
                    {"response", json::object{{"id", "resp_test_1"},
                                              {"created_at", 0.0},
                                              {"model", "dummy"},
                                              {"object", "response"},
                                              {"output", output},
                                              {"parallel_tool_calls", true},
                                              {"tool_choice", "auto"},
                                              {"tools", json::array{}}}},
                    {"id", 1},
                    {"exp_cal_state", json::parse(exp_cal_state)}};
  return json::serialize(body);
}

struct GradeCase {
  const char* name;
  const char* exp_cal_state;  // JSON
  const char* response;       // the assistant's text
  double reward;
};

const GradeCase
    kGradeCases[] =
        {
            {"single_event",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2pm", "duration": 60}])json", 1.0},
            {"multiple_events",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}, "1": {"event_id": 1, "duration": 90, "constraint": "between 12pm and 2pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2pm", "duration": 60}, {"event_id": 1, "start_time": "12pm", "duration": 90}])json",
             1.0},
            {"think_tag",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json(<think>Planning the schedule...</think>[{"event_id": 0, "start_time": "2pm", "duration": 60}])json",
             0.0},
            {"no_events_expected", R"json({})json", R"json(No events to schedule.)json", 1.0},
            {"no_json",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json(This is not valid JSON at all)json", 0.0},
            {"empty_list",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([])json", 0.0},
            {"too_few_events",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}, "1": {"event_id": 1, "duration": 90, "constraint": "between 12pm and 2pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2pm", "duration": 60}])json", 0.0},
            {"too_many_events",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2pm", "duration": 60}, {"event_id": 1, "start_time": "12pm", "duration": 90}])json",
             0.0},
            {"overlap",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": null, "min_time": "10:00", "max_time": "16:00"}, "1": {"event_id": 1, "duration": 60, "constraint": null, "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2pm", "duration": 60}, {"event_id": 1, "start_time": "2:30pm", "duration": 60}])json",
             0.0},
            {"before_violated",
             R"json({"0": {"event_id": 0, "duration": 45, "constraint": "before 12:45pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "12:15pm", "duration": 45}])json", 0.0},
            {"before_met",
             R"json({"0": {"event_id": 0, "duration": 45, "constraint": "before 12:45pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "11:15am", "duration": 45}])json", 1.0},
            {"after_violated",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "after 2pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "1:30pm", "duration": 60}])json", 0.0},
            {"after_met",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "after 2pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2:30pm", "duration": 60}])json", 1.0},
            {"between_starts_early",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "1:30pm", "duration": 60}])json", 0.0},
            {"between_ends_late",
             R"json({"0": {"event_id": 0, "duration": 90, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "3pm", "duration": 90}])json", 0.0},
            {"between_met",
             R"json({"0": {"event_id": 0, "duration": 90, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2pm", "duration": 90}])json", 1.0},
            {"at_violated",
             R"json({"0": {"event_id": 0, "duration": 30, "constraint": "at 12:15pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "12:30pm", "duration": 30}])json", 0.0},
            {"at_met",
             R"json({"0": {"event_id": 0, "duration": 30, "constraint": "at 12:15pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "12:15pm", "duration": 30}])json", 1.0},
            {"before_min_time",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": null, "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "9am", "duration": 60}])json", 0.0},
            {"after_max_time",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": null, "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "3:30pm", "duration": 60}])json", 0.0},
            {"wrong_duration",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": null, "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2pm", "duration": 90}])json", 0.0},
            {"no_constraint",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": null, "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2pm", "duration": 60}])json", 1.0},
            {"complex_schedule",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}, "1": {"event_id": 1, "duration": 90, "constraint": "between 12pm and 2pm", "min_time": "10:00", "max_time": "16:00"}, "2": {"event_id": 2, "duration": 45, "constraint": "before 12pm", "min_time": "10:00", "max_time": "16:00"}, "3": {"event_id": 3, "duration": 30, "constraint": "at 10:00", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2:30pm", "duration": 60}, {"event_id": 1, "start_time": "12:30pm", "duration": 90}, {"event_id": 2, "start_time": "10:30am", "duration": 45}, {"event_id": 3, "start_time": "10:00", "duration": 30}])json",
             1.0},
            {"list_inside_prose",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json(Here is your calendar:
[{"event_id": 0, "start_time": "14:00", "duration": 60}]
Anything else?)json",
             1.0},
            {"first_list_is_graded",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json(Before: [{"event_id": 0, "start_time": "10:00", "duration": 60}] After: [{"event_id": 0, "start_time": "14:00", "duration": 60}])json",
             0.0},
            {"back_to_back",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": null, "min_time": "10:00", "max_time": "16:00"}, "1": {"event_id": 1, "duration": 60, "constraint": null, "min_time": "10:00", "max_time": "16:00"}})json", R"json([{"event_id": 0, "start_time": "10:00", "duration": 60}, {"event_id": 1, "start_time": "11:00", "duration": 60}])json",
             1.0},
            {"string_event_id",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": "0", "start_time": "2pm", "duration": 60}])json", 1.0},
            {"float_event_id",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0.0, "start_time": "2pm", "duration": 60}])json", 0.0},
            {"float_duration",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2pm", "duration": 60.0}])json", 1.0},
            {"string_duration",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2pm", "duration": "60"}])json", 0.0},
            {"identical_duplicate",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2pm", "duration": 60}, {"event_id": 0, "start_time": "2pm", "duration": 60}])json",
             1.0},
            {"conflicting_duplicate",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2:30pm", "duration": 60}, {"event_id": 0, "start_time": "2pm", "duration": 60}])json",
             0.0},
            {"nan_in_other_field",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2pm", "duration": 60, "note": NaN}])json", 1.0},
            // json.loads makes one object of every NaN, so these two events are equal dicts
            // (skipped).
            {"nan_in_identical_duplicates",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": null, "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "11:00", "duration": 60, "note": NaN}, {"event_id": 0, "start_time": "11:00", "duration": 60, "note": NaN}])json",
             1.0},
            {"unknown_constraint",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "around 2pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "11:00", "duration": 60}])json", 1.0},
            {"between_malformed",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2pm", "duration": 60}])json", 0.0},
            {"constraint_not_text",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": 5, "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2pm", "duration": 60}])json", 0.0},
            {"space_before_pm",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2 pm", "duration": 60}])json", 1.0},
            {"upper_case_pm",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2PM", "duration": 60}])json", 0.0},
            {"twelve_am_is_midnight",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": null, "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "12am", "duration": 60}])json", 0.0},
            {"thirteen_pm",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": null, "min_time": "10:00", "max_time": "26:00"}})json",
             R"json([{"event_id": 0, "start_time": "13pm", "duration": 60}])json", 1.0},
            {"arabic_indic_digits",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": null, "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "\u0661\u0660:\u0660\u0660", "duration": 60}])json",
             1.0},
            {"underscore_digits",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": null, "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "1_0:00", "duration": 60}])json", 1.0},
            {"seconds_not_allowed",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": null, "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "10:00:00", "duration": 60}])json", 0.0},
            {"missing_start_time",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "duration": 60}])json", 0.0},
            {"not_json",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "between 2pm and 4pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": 2pm, "duration": 60}])json", 0.0},
            {"before_replaces_every_prefix",
             R"json({"0": {"event_id": 0, "duration": 60, "constraint": "before before 1pm", "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "11:00", "duration": 60}])json", 1.0},
            {"expected_duration_text",
             R"json({"0": {"event_id": 0, "duration": "60", "constraint": null, "min_time": "10:00", "max_time": "16:00"}})json",
             R"json([{"event_id": 0, "start_time": "2pm", "duration": "60"}])json", 0.0},
};

void PrintTo(const GradeCase& c, std::ostream* os) { *os << c.name; }

class CalendarGrade : public ::testing::TestWithParam<GradeCase> {};

TEST_P(CalendarGrade, RewardsLikeUpstream) {
  const auto& c = GetParam();
  auto r =
      server().verify(verify_body(json::array{assistant_message(c.response)}, c.exp_cal_state));
  ASSERT_EQ(r.status, 200) << r.body;
  auto o = json::parse(r.body).as_object();
  EXPECT_EQ(o.at("reward").as_double(), c.reward);
  // Only the base fields are echoed (not exp_cal_state).
  EXPECT_EQ(o.size(), 3u) << r.body;
}

INSTANTIATE_TEST_SUITE_P(Upstream, CalendarGrade, ::testing::ValuesIn(kGradeCases),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- which text is graded --------------------------------------------------------------------

const char* kOneEvent =
    R"({"0":{"event_id":0,"duration":60,"constraint":null,"min_time":"10:00","max_time":"16:00"}})";
const char* kGood = R"([{"event_id": 0, "start_time": "11:00", "duration": 60}])";

double reward_of(const json::array& output, const std::string& state = kOneEvent) {
  auto r = server().verify(verify_body(output, state));
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? json::parse(r.body).at("reward").as_double() : -1.0;
}

TEST(CalendarText, OnlyTheFirstPartOfTheLastOutputItemIsGraded) {
  EXPECT_EQ(reward_of({assistant_message(kGood)}), 1.0);
  EXPECT_EQ(reward_of({}), 0.0);
  // A later item without content (a reasoning item cut off by the token limit, a tool call).
  json::object cut_off{{"type", "reasoning"}, {"id", "rs"}, {"summary", json::array{}}};
  EXPECT_EQ(reward_of({assistant_message(kGood), cut_off}), 0.0);
  json::object call{
      {"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", "{}"}};
  EXPECT_EQ(reward_of({assistant_message(kGood), call}), 0.0);
  // A reasoning item's content is read like a message's.
  json::object reasoning{
      {"type", "reasoning"},
      {"id", "rs"},
      {"summary", json::array{}},
      {"content", json::array{json::object{{"type", "reasoning_text"}, {"text", kGood}}}}};
  EXPECT_EQ(reward_of({reasoning}), 1.0);
  // The second part of a message is never read.
  json::object two_parts = assistant_message("no calendar here");
  two_parts["content"].as_array().push_back(
      json::object{{"type", "output_text"}, {"text", kGood}, {"annotations", json::array{}}});
  EXPECT_EQ(reward_of({two_parts}), 0.0);
  // Empty text is 0.0 even when nothing was expected.
  EXPECT_EQ(reward_of({assistant_message("")}, "{}"), 0.0);
  EXPECT_EQ(reward_of({assistant_message("ok")}, "{}"), 1.0);
}

TEST(CalendarText, ContentWithoutATextFirstPartFailsLikeTheAttributeAccess) {
  json::object plain{{"type", "message"}, {"role", "assistant"}, {"content", kGood}};
  auto r = server().verify(verify_body({plain}, kOneEvent));
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, R"("AttributeError: 'str' object has no attribute 'text'")");
  json::object refusal = assistant_message("");
  refusal["content"] = json::array{json::object{{"type", "refusal"}, {"refusal", "no"}}};
  r = server().verify(verify_body({refusal}, kOneEvent));
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body,
            R"("AttributeError: 'NeMoGymResponseOutputRefusal' object has no attribute 'text'")");
}

TEST(CalendarValidation, ExpCalStateIsARequiredDict) {
  auto r = server().verify(
      R"({"responses_create_params":{"input":[]},"response":{"id":"r","output":[]}})");
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(json::parse(r.body).at("detail").at(0).at("loc"),
            json::parse(R"(["body","exp_cal_state"])"));
  r = server().verify(
      R"({"responses_create_params":{"input":[]},"response":{"id":"r","output":[]},)"
      R"("exp_cal_state":[1]})");
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(server().impl()->class_name, "CalendarResourcesServer");
}

// ---- this folder's example data --------------------------------------------------------------

// data/example_rollouts.jsonl (recorded through gym eval run with the replay model) verifies to
// its recorded rewards when each row is sent with its example.jsonl row.
TEST(CalendarExampleData, OwnExampleRolloutsKeepTheirRewards) {
  const auto dir = std::filesystem::path(GYM_SOURCE_ROOT) / "environments" / "calendar" / "data";
  const auto inputs = gym::test::read_jsonl(dir / "example.jsonl");
  const auto rollouts = gym::test::read_jsonl(dir / "example_rollouts.jsonl");
  ASSERT_EQ(inputs.size(), 5u);
  ASSERT_EQ(rollouts.size(), 5u);
  const std::vector<double> expected{1, 1, 0, 0, 1};
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
  }
}

}  // namespace
