// The pure parts of the aggregate metrics (docs/reference/aggregate-metrics.md): the stripped rows
// sent to /aggregate_metrics (rollouts/collector.h) and the file they end up in
// (rollouts/aggregate.h).
#include "rollouts/aggregate.h"

#include <boost/json.hpp>

#include "rollouts/collector.h"
#include "rollouts/rows.h"
#include "rollouts_test_support.h"

namespace gym::rollouts {
namespace {

namespace json = boost::json;
using testing::error_of;
using testing::obj;
using testing::read_text;
using testing::TempDir;

// ---- strip_for_aggregation ----

TEST(StripForAggregation, DropsResponseButKeepsItsUsage) {
  auto stripped = strip_for_aggregation(obj(
      R"({"responses_create_params":{"input":"q","temperature":0.5},"response":{"id":"r","output":[{"type":"message"}],"usage":{"input_tokens":7,"output_tokens":3}},"reward":1.0,"expected_answer":"B","_ng_task_index":2,"_ng_rollout_index":1,"agent_ref":{"name":"a"}})"));
  EXPECT_EQ(
      core::render_json(stripped),
      R"({"reward":1.0,"expected_answer":"B","_ng_task_index":2,"_ng_rollout_index":1,"agent_ref":{"name":"a"},"response":{"usage":{"input_tokens":7,"output_tokens":3}}})");
}

TEST(StripForAggregation, NoUsageNoResponse) {
  EXPECT_EQ(core::render_json(
                strip_for_aggregation(obj(R"({"response":{"id":"r","output":[]},"reward":0.0})"))),
            R"({"reward":0.0})");
  EXPECT_EQ(core::render_json(
                strip_for_aggregation(obj(R"({"response":{"id":"r","usage":null},"reward":0.0})"))),
            R"({"reward":0.0})");
  EXPECT_EQ(core::render_json(strip_for_aggregation(obj(R"({"response":null,"reward":0.0})"))),
            R"({"reward":0.0})");
  EXPECT_EQ(core::render_json(strip_for_aggregation(obj(R"({"responses_create_params":{}})"))),
            "{}");
}

TEST(StripForAggregation, OtherFieldsStayInTheirOrder) {
  EXPECT_EQ(core::render_json(strip_for_aggregation(obj(
                R"({"z":1,"response_text":"kept","a":[1,{"response":2}],"_ng_rollout_index":0})"))),
            R"({"z":1,"response_text":"kept","a":[1,{"response":2}],"_ng_rollout_index":0})");
}

// ---- the /aggregate_metrics bodies, read from the rollouts file ----

// Results of two agents out of order, one with bytes that are not UTF-8 (an older gym wrote
// them): each agent's body has its rows sorted by (task, rollout) and stripped, in valid UTF-8.
TEST(AggregateBodies, EachAgentsResultsSortedAndStrippedFromTheFile) {
  TempDir dir;
  auto row = [](int task, int rollout, const char* agent, const std::string& text) {
    return R"({"responses_create_params":{"input":"q"},"response":{"output":[{"text":")" + text +
           R"("}],"usage":{"input_tokens":)" + std::to_string(task) +
           R"(}},"reward":1.0,"note":")" + text + R"(","_ng_task_index":)" + std::to_string(task) +
           R"(,"_ng_rollout_index":)" + std::to_string(rollout) + R"(,"agent_ref":{"name":")" +
           agent + "\"}}\n";
  };
  auto path = dir.write("out.jsonl", row(1, 0, "b", "x") + row(2, 1, "a", "caf\xE9") + "\n" +
                                         row(0, 1, "a", "y") + row(2, 0, "a", "z"));
  auto groups = results_by_agent(path);
  ASSERT_EQ(groups.size(), 2u);
  std::vector<RolloutKey> keys;
  for (const auto& line : groups.at("a")) keys.push_back(line.key);
  EXPECT_EQ(keys, (std::vector<RolloutKey>{{0, 1}, {2, 0}, {2, 1}}));
  EXPECT_EQ(
      verify_responses_body(path, groups.at("a")),
      R"({"verify_responses":[)"
      R"({"reward":1.0,"note":"y","_ng_task_index":0,"_ng_rollout_index":1,"agent_ref":{"name":"a"},"response":{"usage":{"input_tokens":0}}},)"
      R"({"reward":1.0,"note":"z","_ng_task_index":2,"_ng_rollout_index":0,"agent_ref":{"name":"a"},"response":{"usage":{"input_tokens":2}}},)"
      R"({"reward":1.0,"note":"caf)"
      "\uFFFD"
      R"(","_ng_task_index":2,"_ng_rollout_index":1,"agent_ref":{"name":"a"},"response":{"usage":{"input_tokens":2}}}]})");
  EXPECT_EQ(
      verify_responses_body(path, groups.at("b")),
      R"({"verify_responses":[{"reward":1.0,"note":"x","_ng_task_index":1,"_ng_rollout_index":0,"agent_ref":{"name":"b"},"response":{"usage":{"input_tokens":1}}}]})");
}

TEST(AggregateBodies, ARowWithoutItsKeyNamesTheLine) {
  TempDir dir;
  auto path =
      dir.write("out.jsonl", "{\"_ng_task_index\":0,\"_ng_rollout_index\":0}\n{\"reward\":1}\n");
  EXPECT_EQ(error_of<std::runtime_error>([&] { results_by_agent(path); }),
            path + " line 2: row has no _ng_task_index");
}

// ---- write_aggregate_metrics ----

TEST(WriteAggregateMetrics, IndentedFileAndKeyMetricsOnStdout) {
  TempDir dir;
  auto path = dir.file("run_aggregate_metrics.json");
  json::array entries{
      obj(R"({"agent_ref":{"name":"alpha"},"agent_metrics":{"mean/reward":0.5,"max/reward":1.0},"key_metrics":{"mean/reward":0.5},"group_level_metrics":[]})"),
      obj(R"({"agent_ref":{"name":"beta"},"agent_metrics":{},"key_metrics":{},"group_level_metrics":[{"_ng_task_index":0}]})"),
  };
  ::testing::internal::CaptureStdout();
  write_aggregate_metrics(path, entries);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "\nKey metrics for alpha:\n{\n    \"mean/reward\": 0.5\n}\n"
            "\nKey metrics for beta:\n{}\n");
  EXPECT_EQ(read_text(path),
            R"([
  {
    "agent_ref": {
      "name": "alpha"
    },
    "agent_metrics": {
      "mean/reward": 0.5,
      "max/reward": 1.0
    },
    "key_metrics": {
      "mean/reward": 0.5
    },
    "group_level_metrics": []
  },
  {
    "agent_ref": {
      "name": "beta"
    },
    "agent_metrics": {},
    "key_metrics": {},
    "group_level_metrics": [
      {
        "_ng_task_index": 0
      }
    ]
  }
])");
}

TEST(WriteAggregateMetrics, ReplacesTheFile) {
  TempDir dir;
  auto path = dir.write("m.json", "previous content, longer than the new one\n");
  write_aggregate_metrics(path, json::array{});
  EXPECT_EQ(read_text(path), "[]");
}

TEST(WriteAggregateMetrics, UnwritablePathIsAnError) {
  TempDir dir;
  auto path = dir.file("missing_dir/m.json");
  EXPECT_EQ(error_of<std::runtime_error>([&] { write_aggregate_metrics(path, json::array{}); }),
            "cannot write " + path);
}

}  // namespace
}  // namespace gym::rollouts
