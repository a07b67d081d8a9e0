// The pure parts of the aggregate metrics (runtime.md 7.9): the stripped rows sent to
// /aggregate_metrics (rollouts/collector.h) and the file they end up in (rollouts/aggregate.h).
#include "rollouts/aggregate.h"

#include <boost/json.hpp>

#include "rollouts/collector.h"
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
