// /aggregate_metrics (docs/reference/aggregate-metrics.md): the default statistics, the environment
// hook, the pass@k family and the route (mcqa's hook: tests/unit/environments).
// Expected values are worked out by hand (see the comments) and agree with upstream's
// nemo_gym/reward_profile.py.
#include "servers/aggregate_metrics.h"
#include "core/json_text.h"
#include "http/router.h"
#include "route_call.h"
#include "servers/resources_server.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

namespace json = boost::json;
using gym::servers::AggregateMetricsHooks;
using gym::servers::compute_aggregate_metrics;
using gym::servers::compute_pass_majority_metrics;
using gym::servers::TaskRollouts;

namespace {

std::string render(const json::value& v) { return gym::core::render_json(v); }

json::object aggregate(const std::string& verify_responses_json,
                       const AggregateMetricsHooks& hooks = {}) {
  return compute_aggregate_metrics(json::parse(verify_responses_json).as_array(), hooks);
}

// Rollout objects grouped into tasks, as TaskRollouts points into them.
struct Tasks {
  explicit Tasks(const std::string& tasks_json) : data(json::parse(tasks_json).as_array()) {
    for (const auto& task : data) {
      tasks.emplace_back();
      for (const auto& rollout : task.as_array()) tasks.back().push_back(&rollout.as_object());
    }
  }
  json::array data;
  TaskRollouts tasks;
};

std::string pass_metrics(const std::string& tasks_json,
                         std::optional<std::string_view> answer_key = std::nullopt) {
  Tasks t(tasks_json);
  return render(compute_pass_majority_metrics(t.tasks, {}, answer_key).metrics);
}

}  // namespace

// ---- default statistics ----

TEST(AggregateMetrics, StatisticsOrderRenderingAndGroups) {
  // Rows arrive out of order; statistics are computed over rows sorted by (task, rollout).
  // Agent: reward [1,1,0] mean 2/3; input_tokens [244,300,100] median 244.0 (a float), std
  // sqrt(((244-214.67)^2 + (300-214.67)^2 + (100-214.67)^2) / 2) = 103.176...; string fields and
  // the nested usage details are not statistics.
  auto out = aggregate(R"([
    {"_ng_task_index":1,"_ng_rollout_index":0,"reward":0.0,"extracted_answer":"B",
     "response":{"usage":{"input_tokens":100,"output_tokens":11,"input_tokens_details":{"cached_tokens":0}}}},
    {"_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"response":{"usage":{"input_tokens":244,"output_tokens":10}}},
    {"_ng_task_index":0,"_ng_rollout_index":1,"reward":1.0,"response":{"usage":{"input_tokens":300,"output_tokens":14}}}
  ])");
  EXPECT_EQ(
      render(out),
      R"({"group_level_metrics":[{"_ng_task_index":0,"mean/reward":1.0,"mean/input_tokens":272.0,"mean/output_tokens":12.0,"max/reward":1.0,"max/input_tokens":300.0,"max/output_tokens":14.0,"min/reward":1.0,"min/input_tokens":244.0,"min/output_tokens":10.0,"median/reward":1.0,"median/input_tokens":272.0,"median/output_tokens":12.0,"std/reward":0.0,"std/input_tokens":39.59797974644666,"std/output_tokens":2.8284271247461903,"sample":{"agent_ref":{"name":"agent"}},"num_rollouts":2,"expected_num_rollouts":2,"missing_num_rollouts":0,"reward_profile_completion_pct":100.0,"rollout_infos":[{"rollout_id":"0:0","_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"input_tokens":244,"output_tokens":10},{"rollout_id":"0:1","_ng_task_index":0,"_ng_rollout_index":1,"reward":1.0,"input_tokens":300,"output_tokens":14}]},)"
      R"({"_ng_task_index":1,"mean/reward":0.0,"mean/input_tokens":100.0,"mean/output_tokens":11.0,"max/reward":0.0,"max/input_tokens":100.0,"max/output_tokens":11.0,"min/reward":0.0,"min/input_tokens":100.0,"min/output_tokens":11.0,"median/reward":0.0,"median/input_tokens":100.0,"median/output_tokens":11.0,"std/reward":0.0,"std/input_tokens":0.0,"std/output_tokens":0.0,"sample":{"agent_ref":{"name":"agent"}},"num_rollouts":1,"expected_num_rollouts":1,"missing_num_rollouts":0,"reward_profile_completion_pct":100.0,"rollout_infos":[{"rollout_id":"1:0","_ng_task_index":1,"_ng_rollout_index":0,"reward":0.0,"input_tokens":100,"output_tokens":11}]}],)"
      R"("agent_metrics":{"mean/reward":0.6666666666666666,"mean/input_tokens":214.66666666666666,"mean/output_tokens":11.666666666666666,"max/reward":1.0,"max/input_tokens":300.0,"max/output_tokens":14.0,"min/reward":0.0,"min/input_tokens":100.0,"min/output_tokens":10.0,"median/reward":1.0,"median/input_tokens":244.0,"median/output_tokens":11.0,"std/reward":0.5773502691896258,"std/input_tokens":103.17622465148321,"std/output_tokens":2.0816659994661326},)"
      R"("key_metrics":{"mean/reward":0.6666666666666666,"mean/input_tokens":214.66666666666666,"mean/output_tokens":11.666666666666666}})");
}

TEST(AggregateMetrics, StatisticValuesAreFloatsEvenForIntegers) {
  auto out = aggregate(R"([{"reward":1,"tokens":244}])");
  EXPECT_EQ(
      render(out.at("agent_metrics")),
      R"({"mean/reward":1.0,"mean/tokens":244.0,"max/reward":1.0,"max/tokens":244.0,"min/reward":1.0,"min/tokens":244.0,"median/reward":1.0,"median/tokens":244.0,"std/reward":0.0,"std/tokens":0.0})");
}

TEST(AggregateMetrics, MedianOfEvenAndOddCounts) {
  // Task 0: [4,1,3,2] -> (2+3)/2 = 2.5; task 1: [4,1,3] -> 3.0; all seven: [1,1,2,3,3,4,4] -> 3.0.
  auto out = aggregate(R"([
    {"_ng_task_index":0,"_ng_rollout_index":0,"x":4},{"_ng_task_index":0,"_ng_rollout_index":1,"x":1},
    {"_ng_task_index":0,"_ng_rollout_index":2,"x":3},{"_ng_task_index":0,"_ng_rollout_index":3,"x":2},
    {"_ng_task_index":1,"_ng_rollout_index":0,"x":4},{"_ng_task_index":1,"_ng_rollout_index":1,"x":1},
    {"_ng_task_index":1,"_ng_rollout_index":2,"x":3}])");
  const auto& groups = out.at("group_level_metrics").as_array();
  EXPECT_EQ(render(groups[0].at("median/x")), "2.5");
  EXPECT_EQ(render(groups[1].at("median/x")), "3.0");
  EXPECT_EQ(render(out.at("agent_metrics").at("median/x")), "3.0");
  // Sample std of [4,1,3,2]: mean 2.5, squares 2.25+2.25+0.25+0.25 = 5, sqrt(5/3).
  EXPECT_EQ(render(groups[0].at("std/x")), "1.2909944487358056");
}

TEST(AggregateMetrics, OneRowGivesStdZero) {
  auto out = aggregate(R"([{"_ng_task_index":3,"_ng_rollout_index":0,"reward":0.5,"flag":false}])");
  const auto& agent = out.at("agent_metrics").as_object();
  EXPECT_EQ(render(agent.at("std/reward")), "0.0");
  EXPECT_EQ(render(agent.at("std/flag")), "0.0");
  EXPECT_EQ(render(agent.at("mean/flag")), "0.0");
}

TEST(AggregateMetrics, MissingFieldsAndUndefinedStd) {
  // Agent: reward has a std, so the std of `a` and `b` (one value each) stays undefined and is
  // omitted. Group 0: `b` is absent, `a` has one value. Group 1: every std is undefined, so the
  // complete fields (reward, b) get 0.0 and `a` (absent) gets nothing.
  auto out = aggregate(R"([
    {"_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"a":2},
    {"_ng_task_index":0,"_ng_rollout_index":1,"reward":0.0},
    {"_ng_task_index":1,"_ng_rollout_index":0,"reward":1.0,"b":true}])");
  const auto& groups = out.at("group_level_metrics").as_array();
  EXPECT_EQ(
      render(out.at("agent_metrics")),
      R"({"mean/reward":0.6666666666666666,"mean/a":2.0,"mean/b":1.0,"max/reward":1.0,"max/a":2.0,"max/b":1.0,"min/reward":0.0,"min/a":2.0,"min/b":1.0,"median/reward":1.0,"median/a":2.0,"median/b":1.0,"std/reward":0.5773502691896258})");
  EXPECT_EQ(
      render(groups[0]),
      R"({"_ng_task_index":0,"mean/reward":0.5,"mean/a":2.0,"max/reward":1.0,"max/a":2.0,"min/reward":0.0,"min/a":2.0,"median/reward":0.5,"median/a":2.0,"std/reward":0.7071067811865476,"sample":{"agent_ref":{"name":"agent"}},"num_rollouts":2,"expected_num_rollouts":2,"missing_num_rollouts":0,"reward_profile_completion_pct":100.0,"rollout_infos":[{"rollout_id":"0:0","_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"a":2},{"rollout_id":"0:1","_ng_task_index":0,"_ng_rollout_index":1,"reward":0.0}]})");
  EXPECT_EQ(
      render(groups[1]),
      R"({"_ng_task_index":1,"mean/reward":1.0,"mean/b":1.0,"max/reward":1.0,"max/b":1.0,"min/reward":1.0,"min/b":1.0,"median/reward":1.0,"median/b":1.0,"std/reward":0.0,"std/b":0.0,"sample":{"agent_ref":{"name":"agent"}},"num_rollouts":1,"expected_num_rollouts":1,"missing_num_rollouts":0,"reward_profile_completion_pct":100.0,"rollout_infos":[{"rollout_id":"1:0","_ng_task_index":1,"_ng_rollout_index":0,"reward":1.0,"b":1}]})");
}

TEST(AggregateMetrics, UsageOverridesTopLevelFields) {
  // The statistic takes usage's 7 at the top-level key's position; rollout_infos take usage keys
  // first and then the top-level value (upstream's order of assignment).
  auto out = aggregate(R"([{"_ng_task_index":0,"_ng_rollout_index":0,"input_tokens":5,"reward":1.0,
    "response":{"usage":{"output_tokens":3,"input_tokens":7,"total_tokens":10}}}])");
  EXPECT_EQ(
      render(out.at("key_metrics")),
      R"({"mean/input_tokens":7.0,"mean/reward":1.0,"mean/output_tokens":3.0,"mean/total_tokens":10.0})");
  EXPECT_EQ(
      render(out.at("group_level_metrics").at(0).at("rollout_infos")),
      R"([{"rollout_id":"0:0","_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"output_tokens":3,"input_tokens":5,"total_tokens":10}])");
}

TEST(AggregateMetrics, RolloutInfosKeepOriginalTypes) {
  auto out = aggregate(
      R"([{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1,"ok":true,"score":0.25,"name":"x","response":{"usage":null}}])");
  EXPECT_EQ(
      render(out.at("group_level_metrics").at(0).at("rollout_infos")),
      R"([{"rollout_id":"0:0","_ng_task_index":0,"_ng_rollout_index":0,"reward":1,"ok":1,"score":0.25}])");
  EXPECT_EQ(render(out.at("agent_metrics").at("mean/ok")), "1.0");
}

TEST(AggregateMetrics, MissingIndicesCountAsZero) {
  auto out = aggregate(R"([{"_ng_rollout_index":1,"reward":0.0},{"reward":1.0}])");
  const auto& groups = out.at("group_level_metrics").as_array();
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(render(groups[0].at("_ng_task_index")), "0");
  EXPECT_EQ(render(groups[0].at("num_rollouts")), "2");
  EXPECT_EQ(
      render(groups[0].at("rollout_infos")),
      R"([{"rollout_id":"0:0","_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0},{"rollout_id":"0:1","_ng_task_index":0,"_ng_rollout_index":1,"reward":0.0}])");
}

TEST(AggregateMetrics, DuplicateRolloutKeyIsAnError) {
  try {
    aggregate(R"([{"reward":1.0},{"_ng_task_index":0,"reward":0.0}])");
    FAIL() << "no error";
  } catch (const gym::python_compat::ValueError& e) {
    EXPECT_STREQ(e.what(), "Duplicate materialized input row for rollout key (0, 0)");
    EXPECT_EQ(gym::http::exception_response(e).body,
              R"j("ValueError: Duplicate materialized input row for rollout key (0, 0)")j");
  }
  EXPECT_THROW(aggregate(R"([{"_ng_task_index":"0","reward":1.0}])"),
               gym::python_compat::ValueError);
  EXPECT_THROW(aggregate(R"([1])"), gym::python_compat::ValueError);
}

TEST(AggregateMetrics, EmptyInputGivesEmptyMembersAndCallsNoHook) {
  AggregateMetricsHooks hooks;
  hooks.compute_metrics = [](const TaskRollouts&) -> json::object {
    ADD_FAILURE() << "hook called";
    return {};
  };
  EXPECT_EQ(render(aggregate("[]", hooks)),
            R"({"group_level_metrics":[],"agent_metrics":{},"key_metrics":{}})");
}

TEST(AggregateMetrics, UpstreamProfileExample) {
  // Upstream's tests/unit_tests/test_reward_profile.py: three tasks of two rollouts with
  // reward 0/1, a bool and a usage field. Per task std sqrt(0.5); overall sqrt(1.5/5).
  std::string rows = "[";
  for (int t = 0; t < 3; ++t) {
    for (int r = 0; r < 2; ++r) {
      if (rows.size() > 1) rows += ",";
      rows += R"({"_ng_task_index":)" + std::to_string(t) + R"(,"_ng_rollout_index":)" +
              std::to_string(r) + R"(,"response":{"usage":{"abc usage":1}},"reward":)" +
              std::to_string(r) + R"(,"bool":)" + (r == 0 ? "true" : "false") + "}";
    }
  }
  rows += "]";
  auto out = aggregate(rows);
  const auto& agent = out.at("agent_metrics").as_object();
  EXPECT_EQ(
      render(agent),
      R"({"mean/reward":0.5,"mean/bool":0.5,"mean/abc usage":1.0,"max/reward":1.0,"max/bool":1.0,"max/abc usage":1.0,"min/reward":0.0,"min/bool":0.0,"min/abc usage":1.0,"median/reward":0.5,"median/bool":0.5,"median/abc usage":1.0,"std/reward":0.5477225575051661,"std/bool":0.5477225575051661,"std/abc usage":0.0})");
  for (const auto& g : out.at("group_level_metrics").as_array()) {
    EXPECT_EQ(render(g.at("std/reward")), "0.7071067811865476");
    EXPECT_EQ(render(g.at("std/abc usage")), "0.0");
  }
}

TEST(AggregateMetrics, MeanUsesNumpyPairwiseSummation) {
  // Ten times 0.1: numpy's pairwise sum is exactly 1.0, a running sum 0.9999999999999999.
  std::string rows = "[";
  for (int r = 0; r < 10; ++r)
    rows += (r ? "," : "") + std::string(R"({"_ng_rollout_index":)") + std::to_string(r) +
            R"(,"reward":0.1})";
  rows += "]";
  auto out = aggregate(rows);
  EXPECT_EQ(
      render(out.at("agent_metrics")),
      R"({"mean/reward":0.1,"max/reward":0.1,"min/reward":0.1,"median/reward":0.1,"std/reward":0.0})");
}

TEST(AggregateMetrics, HookMetricsAndKeyMetrics) {
  AggregateMetricsHooks hooks;
  hooks.compute_metrics = [](const TaskRollouts& tasks) {
    EXPECT_EQ(tasks.size(), 2u);
    EXPECT_EQ(tasks[0].size(), 2u);
    // Rollouts of a task in rollout order, whatever the input order.
    EXPECT_EQ(tasks[0][0]->at("reward").as_double(), 0.5);
    return json::parse(R"({"mean/reward":9.0,"extra":1.5,
      "per_task_metrics":[{"_ng_task_index":1,"score":3,"num_rollouts":7},{"_ng_task_index":8,"x":1}]})")
        .as_object();
  };
  auto out = aggregate(R"([{"_ng_task_index":0,"_ng_rollout_index":1,"reward":1.0},
                           {"_ng_task_index":1,"_ng_rollout_index":0,"reward":0.0},
                           {"_ng_task_index":0,"_ng_rollout_index":0,"reward":0.5}])",
                       hooks);
  const auto& agent = out.at("agent_metrics").as_object();
  EXPECT_EQ(agent.begin()->key(), "mean/reward");  // replaced in place
  EXPECT_EQ(render(agent.at("mean/reward")), "9.0");
  EXPECT_EQ((agent.end() - 1)->key(), "extra");
  EXPECT_FALSE(agent.contains("per_task_metrics"));
  EXPECT_EQ(render(out.at("key_metrics")), R"({"mean/reward":9.0})");
  const auto& g1 = out.at("group_level_metrics").at(1).as_object();
  EXPECT_EQ(render(g1.at("score")), "3");
  EXPECT_EQ(render(g1.at("num_rollouts")), "7");
  EXPECT_EQ((g1.end() - 1)->key(), "score");
  EXPECT_FALSE(out.at("group_level_metrics").at(0).as_object().contains("score"));

  hooks.compute_metrics = [](const TaskRollouts&) { return json::object{{"extra", 1.5}}; };
  hooks.key_metrics = [](const json::object& agent_metrics) {
    return json::object{{"extra", agent_metrics.at("extra")}};
  };
  EXPECT_EQ(render(aggregate(R"([{"reward":1.0}])", hooks).at("key_metrics")), R"({"extra":1.5})");
}

// ---- numeric building blocks ----

TEST(AggregateMetricsNumeric, SummationsMatchNumpyAndPython) {
  const std::vector<double> tenths(10, 0.1);
  EXPECT_EQ(gym::servers::numpy_pairwise_sum(tenths), 1.0);
  EXPECT_EQ(gym::servers::python_float_sum(tenths), 1.0);
  // Fewer than 8 values: numpy adds in order; Python compensates.
  const std::vector<double> cancel{1e16, 1.0, -1e16};
  EXPECT_EQ(gym::servers::numpy_pairwise_sum(cancel), 0.0);
  EXPECT_EQ(gym::servers::python_float_sum(cancel), 1.0);
  std::vector<double> many;
  for (int i = 1; i <= 300; ++i) many.push_back(0.1 * i);
  EXPECT_EQ(gym::servers::numpy_pairwise_sum(many), 4515.0);
}

TEST(PassK, BinomialRatioIsCorrectlyRounded) {
  using gym::servers::binomial_ratio;
  EXPECT_EQ(gym::core::python_float_repr(binomial_ratio(2, 4, 2)), "0.16666666666666666");
  EXPECT_EQ(binomial_ratio(1, 4, 2), 0.0);
  // Beyond 2^53: Python's exact int / int.
  EXPECT_EQ(gym::core::python_float_repr(binomial_ratio(100, 200, 50)), "2.2229697512078617e-19");
  EXPECT_EQ(gym::core::python_float_repr(1.0 - binomial_ratio(60, 70, 30)), "0.9978632446159388");
}

// ---- pass@k family ----

TEST(PassK, FourRolloutsOneWrong) {
  // n = 4, one wrong: pass@1 = 1 - C(1,1)/C(4,1) = 75.0; pass@k = 100.0 for k >= 2.
  // pass@1[avg-of-k] averages the first k: 100, 50, 66.67, 75. per_sample [100,0,100,100];
  // std across the first 2 runs sqrt(5000) = 70.71..., std_err / sqrt(2) = 50.0.
  EXPECT_EQ(
      pass_metrics(R"([[{"reward":1.0},{"reward":0.0},{"reward":1.0},{"reward":1.0}]])"),
      R"({"pass@1/accuracy":75.0,"pass@1[avg-of-1]/accuracy":100.0,"pass@2/accuracy":100.0,"pass@1[avg-of-2]/accuracy":50.0,"pass@3/accuracy":100.0,"pass@1[avg-of-3]/accuracy":66.66666666666666,"pass@4/accuracy":100.0,"pass@1[avg-of-4]/accuracy":75.0,"per_sample_aggregate":{"accuracy":[100.0,0.0,100.0,100.0]},"pass@1[avg-of-2]/accuracy/std_dev_across_runs":70.71067811865476,"pass@1[avg-of-2]/accuracy/std_err_across_runs":50.0,"pass@1[avg-of-3]/accuracy/std_dev_across_runs":57.735026918962575,"pass@1[avg-of-3]/accuracy/std_err_across_runs":33.333333333333336,"pass@1[avg-of-4]/accuracy/std_dev_across_runs":50.0,"pass@1[avg-of-4]/accuracy/std_err_across_runs":25.0})");
}

TEST(PassK, FourRolloutsTwoWrong) {
  // pass@2 = 1 - C(2,2)/C(4,2) = 5/6 -> 83.33333333333334.
  auto m = json::parse(
      pass_metrics(R"([[{"reward":1.0},{"reward":0.0},{"reward":0.0},{"reward":1.0}]])"));
  EXPECT_EQ(render(m.at("pass@1/accuracy")), "50.0");
  EXPECT_EQ(render(m.at("pass@2/accuracy")), "83.33333333333334");
  EXPECT_EQ(render(m.at("pass@3/accuracy")), "100.0");
  EXPECT_EQ(render(m.at("pass@1[avg-of-3]/accuracy")), "33.33333333333333");
  EXPECT_EQ(render(m.at("pass@1[avg-of-4]/accuracy/std_err_across_runs")), "28.867513459481287");
}

TEST(PassK, MajorityTiesAverageTheTiedScores) {
  // Task 0 at k=2: A (1) and B (0) once each -> 0.5; task 1: C twice -> 1.0; majority@2 = 75.0.
  EXPECT_EQ(
      pass_metrics(
          R"([[{"reward":1.0,"a":"A"},{"reward":0.0,"a":"B"}],[{"reward":1.0,"a":"C"},{"reward":1.0,"a":"C"}]])",
          "a"),
      R"({"pass@1/accuracy":75.0,"pass@1[avg-of-1]/accuracy":100.0,"majority@1/accuracy":100.0,"pass@1/no_answer":0.0,"pass@1[avg-of-1]/no_answer":0.0,"majority@1/no_answer":0.0,"pass@2/accuracy":100.0,"pass@1[avg-of-2]/accuracy":75.0,"majority@2/accuracy":75.0,"pass@2/no_answer":0.0,"pass@1[avg-of-2]/no_answer":0.0,"majority@2/no_answer":0.0,"per_sample_aggregate":{"accuracy":[100.0,50.0],"no_answer":[0.0,0.0]},"pass@1[avg-of-2]/accuracy/std_dev_across_runs":35.35533905932738,"pass@1[avg-of-2]/accuracy/std_err_across_runs":25.0,"pass@1[avg-of-2]/no_answer/std_dev_across_runs":0.0,"pass@1[avg-of-2]/no_answer/std_err_across_runs":0.0})");
}

TEST(PassK, NoAnswerAndContinuousScores) {
  // Task 0: scores 0.5, 0.25 (not 0/1: pass@k = max of the first k), answers null and missing
  // (no_answer 1, 1; majority without answers = 0). Task 1: 0.75 with answer "X".
  EXPECT_EQ(
      pass_metrics(R"([[{"reward":0.5,"a":null},{"reward":0.25}],[{"reward":0.75,"a":"X"}]])", "a"),
      R"({"pass@1/accuracy":62.5,"pass@1[avg-of-1]/accuracy":62.5,"majority@1/accuracy":37.5,"pass@1/no_answer":50.0,"pass@1[avg-of-1]/no_answer":50.0,"majority@1/no_answer":0.0,"pass@2/accuracy":50.0,"pass@1[avg-of-2]/accuracy":56.25,"majority@2/accuracy":37.5,"pass@2/no_answer":100.0,"pass@1[avg-of-2]/no_answer":50.0,"majority@2/no_answer":0.0,"per_sample_aggregate":{"accuracy":[62.5,25.0],"no_answer":[50.0,100.0]},"pass@1[avg-of-2]/accuracy/std_dev_across_runs":26.516504294495533,"pass@1[avg-of-2]/accuracy/std_err_across_runs":18.75,"pass@1[avg-of-2]/no_answer/std_dev_across_runs":35.35533905932738,"pass@1[avg-of-2]/no_answer/std_err_across_runs":25.0})");
}

TEST(PassK, CustomScoresAndEmptyInput) {
  Tasks t(R"([[{"reward":1.0,"f1":0.5}],[{"reward":0.0,"f1":1.0},{"reward":1.0}]])");
  auto score = [](const json::object& r) {
    gym::servers::Scores s{{"accuracy", json::value_to<double>(r.at("reward"))}};
    if (r.contains("f1")) s.emplace_back("f1", r.at("f1").as_double());
    return s;
  };
  auto result = compute_pass_majority_metrics(t.tasks, score);
  EXPECT_EQ(result.max_k, 2u);
  EXPECT_EQ(result.score_names, (std::vector<std::string>{"accuracy", "f1"}));
  // f1 of task 1 has one score, so pass@2/f1 has no qualifying task; per_sample f1 = [75.0].
  EXPECT_FALSE(result.metrics.contains("pass@2/f1"));
  EXPECT_EQ(render(result.metrics.at("pass@1/f1")), "75.0");
  EXPECT_EQ(render(result.metrics.at("per_sample_aggregate")),
            R"({"accuracy":[50.0,100.0],"f1":[75.0]})");
  EXPECT_FALSE(result.metrics.contains("pass@1[avg-of-2]/f1/std_dev_across_runs"));
  EXPECT_EQ(render(compute_pass_majority_metrics({}).metrics), "{}");
  Tasks missing(R"([[{"score":1.0}]])");
  EXPECT_THROW(compute_pass_majority_metrics(missing.tasks), gym::python_compat::KeyError);
}

TEST(PassK, HighestKMetrics) {
  using gym::servers::highest_k_metrics;
  auto am = json::parse(
                pass_metrics(R"([[{"reward":1.0},{"reward":0.0},{"reward":1.0},{"reward":1.0}]])"))
                .as_object();
  EXPECT_EQ(render(highest_k_metrics(am, "pass@1[avg-of-{k}]")),
            R"({"pass@1[avg-of-4]/accuracy":75.0})");
  EXPECT_EQ(render(highest_k_metrics(am, "pass@{k}")), R"({"pass@4/accuracy":100.0})");
  EXPECT_EQ(render(highest_k_metrics(am, "pass@{k}", std::vector<std::string>{"no_answer"})), "{}");
  EXPECT_EQ(
      render(highest_k_metrics(am, "pass@{k}", std::nullopt, std::vector<std::string>{"accuracy"})),
      "{}");
  // k compares as a number: 10 > 9.
  json::object multi{
      {"pass@9/a", 1.0}, {"pass@10/a", 2.0}, {"pass@10/b", 3.0}, {"x/pass@11/a", 4.0}};
  EXPECT_EQ(render(highest_k_metrics(multi, "pass@{k}")), R"({"pass@10/a":2.0,"pass@10/b":3.0})");
}

// ---- the route ----

namespace {

gym::http::Response call(const gym::http::Router& router, const std::string& body) {
  return gym::test::call_route(router, gym::http::Method::post, "/aggregate_metrics", body);
}

}  // namespace

TEST(AggregateMetricsRoute, BaseRoutesServeTheDefaultAndTheHook) {
  gym::http::Router plain;
  gym::servers::add_resources_base_routes(plain);
  auto res = call(plain, R"({"verify_responses":[{"reward":1.0,"extracted_answer":"A"}]})");
  EXPECT_EQ(res.status, 200);
  auto body = json::parse(res.body).as_object();
  EXPECT_EQ(render(body.at("key_metrics")), R"({"mean/reward":1.0})");

  gym::http::Router hooked;
  AggregateMetricsHooks hooks;
  hooks.compute_metrics = [](const TaskRollouts& tasks) {
    return json::object{{"tasks", static_cast<std::int64_t>(tasks.size())}};
  };
  hooks.key_metrics = [](const json::object& agent_metrics) {
    return json::object{{"tasks", agent_metrics.at("tasks")}};
  };
  gym::servers::add_resources_base_routes(hooked, "stateless", hooks);
  res = call(hooked, R"({"verify_responses":[{"reward":1.0,"extracted_answer":"A"}]})");
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(render(json::parse(res.body).at("key_metrics")), R"({"tasks":1})");
}

TEST(AggregateMetricsRoute, SchemaViolationsAre422AndDuplicatesThrow) {
  gym::http::Router router;
  gym::servers::add_resources_base_routes(router);
  EXPECT_EQ(call(router, "{}").status, 422);
  auto res = call(router, R"({"verify_responses":[1]})");
  EXPECT_EQ(res.status, 422);
  EXPECT_NE(res.body.find("dict_type"), std::string::npos) << res.body;
  EXPECT_THROW(call(router, R"({"verify_responses":[{},{}]})"), gym::python_compat::ValueError);
}
