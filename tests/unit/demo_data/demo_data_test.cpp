// demo_data::generate on its own (no servers): same seed, same bytes; distinct inputs; four
// recorded rollouts per task, shaped as NeMo Gym writes them. That the recorded rewards are the
// ones our servers compute is tests/integration/demo_data_test.cpp.
#include "demo_data/demo_data.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "core/json_text.h"
#include "files.h"
#include "models/replay_store.h"
#include "python_compat/json_equal.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using gym::demo_data::DemoOptions;
using gym::demo_data::generate;
using gym::test::read_text;
using gym::test::TempDir;

namespace {

std::vector<json::object> read_jsonl(const fs::path& p) {
  std::vector<json::object> rows;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);)
    rows.push_back(gym::core::parse_json(line).as_object());
  return rows;
}

std::string input_key(const json::object& row) {
  return gym::python_compat::canonical_json(
      gym::models::normalize_input(row.at("responses_create_params").at("input")));
}

// The default data, generated once for the shape tests.
struct DefaultData {
  TempDir dir;
  gym::demo_data::DemoData data = generate(dir.file("demo"));
  std::vector<json::object> inputs = read_jsonl(data.input);
  std::vector<json::object> rollouts = read_jsonl(data.rollouts);
};

const DefaultData& default_data() {
  static const DefaultData d;
  return d;
}

}  // namespace

TEST(DemoData, SameSeedSameBytesOtherSeedOtherData) {
  TempDir dir;
  auto a = generate(dir.file("a"), {20, 7});
  auto b = generate(dir.file("b"), {20, 7});
  auto c = generate(dir.file("c"), {20, 8});
  EXPECT_EQ(read_text(a.input), read_text(b.input));
  EXPECT_EQ(read_text(a.rollouts), read_text(b.rollouts));
  EXPECT_NE(read_text(a.input), read_text(c.input));
  EXPECT_NE(read_text(a.rollouts), read_text(c.rollouts));
}

TEST(DemoData, DefaultIsThreeEnvironmentsOfAHundredTasksAndFourRolloutsEach) {
  const auto& d = default_data();
  EXPECT_EQ(d.data.input.filename(), "demo.jsonl");
  EXPECT_EQ(d.data.rollouts.filename(), "demo_rollouts.jsonl");  // where replay_model looks
  ASSERT_EQ(d.data.environments.size(), 3u);
  EXPECT_EQ(d.data.environments[0].resources_server, "mcqa");
  EXPECT_EQ(d.data.environments[1].resources_server, "example_multi_step");
  EXPECT_EQ(d.data.environments[1].agent, "example_multi_step_simple_agent");
  EXPECT_EQ(d.data.environments[2].agent, "string_match_simple_agent");
  for (const auto& env : d.data.environments) EXPECT_EQ(env.tasks, 100);
  EXPECT_EQ(d.inputs.size(), 300u);
  EXPECT_EQ(d.rollouts.size(), 300u * gym::demo_data::kDemoRepeats);
}

TEST(DemoData, InputsAreDistinctAcrossTasksAndEnvironments) {
  std::set<std::string> keys;
  for (const auto& row : default_data().inputs) keys.insert(input_key(row));
  EXPECT_EQ(keys.size(), default_data().inputs.size());
}

TEST(DemoData, EveryTaskHasFourRecordedRolloutsOfItsOwnInput) {
  const auto& d = default_data();
  std::map<std::int64_t, std::vector<const json::object*>> by_task;
  for (const auto& row : d.rollouts) by_task[row.at("_ng_task_index").as_int64()].push_back(&row);
  ASSERT_EQ(by_task.size(), d.inputs.size());
  for (std::size_t i = 0; i < d.inputs.size(); ++i) {
    const auto& input = d.inputs[i];
    const auto& agent_ref = input.at("agent_ref").as_object();
    EXPECT_EQ(agent_ref.at("type"), "responses_api_agents");
    const auto& recorded = by_task[static_cast<std::int64_t>(i)];
    ASSERT_EQ(recorded.size(), 4u) << "task " << i;
    for (std::size_t r = 0; r < recorded.size(); ++r) {
      const auto& row = *recorded[r];
      EXPECT_EQ(row.at("_ng_rollout_index").as_int64(), static_cast<std::int64_t>(r));
      EXPECT_EQ(row.at("agent_ref"), agent_ref);
      EXPECT_EQ(input_key(row), input_key(input)) << "task " << i;
      // The expanded create params of the /verify echo, starting the row as NeMo Gym's do.
      EXPECT_EQ(row.begin()->key(), "responses_create_params");
      EXPECT_TRUE(row.at("responses_create_params").as_object().contains("stream"));
      const auto& response = row.at("response").as_object();
      EXPECT_EQ(response.at("object"), "response");
      EXPECT_TRUE(response.at("id").as_string().starts_with("resp_"));
      const auto& output = response.at("output").as_array();
      ASSERT_FALSE(output.empty());
      EXPECT_EQ(output.back().at("type"), "message");  // every rollout ends with an answer
      const auto& usage = response.at("usage").as_object();
      EXPECT_EQ(usage.at("total_tokens").as_int64(),
                usage.at("input_tokens").as_int64() + usage.at("output_tokens").as_int64());
      EXPECT_TRUE(row.at("reward").is_double());
    }
  }
}

TEST(DemoData, RecordsAMixOfRightAndWrongAnswers) {
  std::map<std::string, std::vector<double>> rewards;
  std::map<std::string, int> tasks_solved_sometimes, tasks_solved_always, no_answer, tool_calls;
  std::map<std::int64_t, std::vector<double>> per_task;
  for (const auto& row : default_data().rollouts) {
    std::string agent(row.at("agent_ref").at("name").as_string());
    double reward = row.at("reward").as_double();
    rewards[agent].push_back(reward);
    per_task[row.at("_ng_task_index").as_int64()].push_back(reward);
    if (const auto* e = row.if_contains("extracted_answer"); e && e->is_null()) ++no_answer[agent];
    for (const auto& item : row.at("response").at("output").as_array())
      if (item.at("type") == "function_call_output") ++tool_calls[agent];
  }
  for (const auto& [agent, values] : rewards) {
    double mean = 0;
    for (double v : values) mean += v;
    mean /= static_cast<double>(values.size());
    EXPECT_GT(mean, 0.4) << agent;
    EXPECT_LT(mean, 0.8) << agent;
  }
  int mixed = 0;  // tasks where some rollouts pass and others fail: pass@4 > pass@1
  for (const auto& [task, values] : per_task)
    mixed += std::set<double>(values.begin(), values.end()).size() > 1;
  EXPECT_GT(mixed, 60);
  EXPECT_GT(no_answer["mcqa_simple_agent"], 0);
  EXPECT_GT(no_answer["string_match_simple_agent"], 0);
  EXPECT_GT(tool_calls["example_multi_step_simple_agent"], 1000);
  EXPECT_EQ(tool_calls["mcqa_simple_agent"], 0);
  auto& sm = rewards["string_match_simple_agent"];
  EXPECT_NE(std::find(sm.begin(), sm.end(), 0.98), sm.end()) << "no partial credit recorded";
}

TEST(DemoData, RejectsFewerThanOneTask) {
  TempDir dir;
  EXPECT_THROW(generate(dir.file("x"), {0, 7}), std::invalid_argument);
}
