// mcqa's /aggregate_metrics hooks (environments/mcqa/README.md): key metrics at the highest k, the
// recorded conformance rollouts, and the routes mcqa_environment() gives a resources server.
#include "mcqa/mcqa_metrics.h"
#include "builtin_environments.h"
#include "conformance_dir.h"
#include "core/json_text.h"
#include "files.h"
#include "http/router.h"
#include "route_call.h"
#include "servers/aggregate_metrics.h"
#include "servers/registry.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <filesystem>
#include <map>
#include <string>

namespace json = boost::json;
using gym::servers::compute_aggregate_metrics;
using gym::test::conformance_dir;
using gym::test::read_jsonl;

namespace {

std::string render(const json::value& v) { return gym::core::render_json(v); }

json::object aggregate(const std::string& verify_responses_json,
                       const gym::servers::AggregateMetricsHooks& hooks) {
  return compute_aggregate_metrics(json::parse(verify_responses_json).as_array(), hooks);
}

}  // namespace

TEST(McqaMetrics, KeyMetricsAtHighestK) {
  auto out = aggregate(R"([
    {"_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"expected_answer":"A","extracted_answer":"A"},
    {"_ng_task_index":0,"_ng_rollout_index":1,"reward":0.0,"expected_answer":"A","extracted_answer":null},
    {"_ng_task_index":1,"_ng_rollout_index":0,"reward":0.0,"expected_answer":"C","extracted_answer":"B"},
    {"_ng_task_index":1,"_ng_rollout_index":1,"reward":0.0,"expected_answer":"C","extracted_answer":"B"}])",
                       gym::environments::mcqa_aggregate_hooks());
  EXPECT_EQ(
      render(out.at("key_metrics")),
      R"({"mean/reward":0.25,"pass@1[avg-of-2]/accuracy":25.0,"pass@1[avg-of-2]/no_answer":25.0,"pass@2/no_answer":50.0,"majority@2/accuracy":50.0,"pass@1/accuracy":25.0})");
  EXPECT_EQ(
      render(out.at("agent_metrics")),
      R"({"mean/reward":0.25,"max/reward":1.0,"min/reward":0.0,"median/reward":0.0,"std/reward":0.5,"pass@1/accuracy":25.0,"pass@1[avg-of-1]/accuracy":50.0,"majority@1/accuracy":50.0,"pass@1/no_answer":25.0,"pass@1[avg-of-1]/no_answer":0.0,"majority@1/no_answer":0.0,"pass@2/accuracy":50.0,"pass@1[avg-of-2]/accuracy":25.0,"majority@2/accuracy":50.0,"pass@2/no_answer":50.0,"pass@1[avg-of-2]/no_answer":25.0,"majority@2/no_answer":0.0,"per_sample_aggregate":{"accuracy":[50.0,0.0],"no_answer":[0.0,50.0]},"pass@1[avg-of-2]/accuracy/std_dev_across_runs":35.35533905932738,"pass@1[avg-of-2]/accuracy/std_err_across_runs":25.0,"pass@1[avg-of-2]/no_answer/std_dev_across_runs":35.35533905932738,"pass@1[avg-of-2]/no_answer/std_err_across_runs":25.0})");
}

namespace {

std::string first_input_text(const json::object& row) {
  return std::string(row.at("responses_create_params").at("input").at(0).at("content").as_string());
}

}  // namespace

TEST(McqaMetrics, ConformanceKeyMetrics) {
  // The five recorded mcqa rollouts, matched to example.jsonl by input, with the decided rewards 1,
  // 1, 0, 1, 1 (task 1 extracts "C" under the current rule:
  // docs/design/conformance.md#where-the-recorded-data-disagrees).
  const std::filesystem::path dir = std::filesystem::path(conformance_dir()) / "mcqa";
  const auto inputs_path = dir / "example.jsonl";
  const auto rollouts_path = dir / "example_rollouts.jsonl";
  ASSERT_TRUE(std::filesystem::exists(inputs_path) && std::filesystem::exists(rollouts_path))
      << "conformance data missing: " << dir
      << " (set GYM_CONFORMANCE_DIR to the shared/data/conformance directory)";
  const auto inputs = read_jsonl(inputs_path);
  const auto recorded = read_jsonl(rollouts_path);
  ASSERT_EQ(inputs.size(), 5u);
  ASSERT_EQ(recorded.size(), 5u);
  std::map<std::string, std::int64_t> task_of;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    task_of[first_input_text(inputs[i])] = static_cast<std::int64_t>(i);

  // As the collector sends them: sorted by task, stripped of responses_create_params and of the
  // response except its usage.
  std::map<std::int64_t, json::object> by_task;
  for (const auto& row : recorded) {
    auto it = task_of.find(first_input_text(row));
    ASSERT_NE(it, task_of.end()) << "recorded rollout without input row";
    json::object vr;
    vr["response"] = json::object{{"usage", row.at("response").at("usage")}};
    vr["reward"] = row.at("reward");
    vr["expected_answer"] = row.at("expected_answer");
    vr["extracted_answer"] = row.at("extracted_answer");
    if (it->second == 1) {  // the decided exception (docs/design/conformance.md)
      EXPECT_EQ(render(row.at("reward")), "0.0");
      vr["reward"] = 1.0;
      vr["extracted_answer"] = "C";
    }
    vr["_ng_task_index"] = it->second;
    vr["_ng_rollout_index"] = 0;
    vr["agent_ref"] = json::object{{"name", "mcqa_simple_agent"}};
    by_task[it->second] = std::move(vr);
  }
  ASSERT_EQ(by_task.size(), 5u);
  json::array verify_responses;
  std::string rewards;
  for (auto& [task, vr] : by_task) {
    rewards += render(vr.at("reward")) + " ";
    verify_responses.push_back(std::move(vr));
  }
  EXPECT_EQ(rewards, "1.0 1.0 0.0 1.0 1.0 ");

  auto out = compute_aggregate_metrics(verify_responses, gym::environments::mcqa_aggregate_hooks());
  EXPECT_EQ(
      render(out.at("key_metrics")),
      R"({"mean/reward":0.8,"pass@1[avg-of-1]/accuracy":80.0,"pass@1[avg-of-1]/no_answer":0.0,"pass@1/no_answer":0.0,"majority@1/accuracy":80.0,"pass@1/accuracy":80.0})");
  const auto& agent = out.at("agent_metrics").as_object();
  EXPECT_EQ(render(agent.at("per_sample_aggregate")), R"({"accuracy":[80.0],"no_answer":[0.0]})");
  EXPECT_EQ(render(agent.at("mean/input_tokens")), "212.2");
  EXPECT_EQ(out.at("group_level_metrics").as_array().size(), 5u);
}

using gym::test::call_route;

TEST(McqaRoutes, RegisteredWithTheBaseRoutesStatelessReverifyAndItsHooks) {
  gym::servers::Registry registry;
  gym::servers::register_environment(registry, gym::environments::mcqa_environment());
  const auto* impl = registry.find("resources_servers", "mcqa");
  ASSERT_NE(impl, nullptr);
  EXPECT_EQ(impl->class_name, "MCQAResourcesServer");
  json::object global{
      {"mcqa", json::object{{"resources_servers", json::object{{"mcqa", json::object{}}}}}}};
  gym::servers::ServerContext ctx(global, gym::core::find_server_instances(global).at(0));
  gym::http::Router router;
  impl->add_routes(ctx, router);

  EXPECT_EQ(call_route(router, gym::http::Method::get, "/").status, 200);
  EXPECT_EQ(call_route(router, gym::http::Method::post, "/seed_session", "{}").body, "{}");
  EXPECT_EQ(call_route(router, gym::http::Method::get, "/reverify_mode").body, R"("stateless")");
  // /verify is there and validates its body before any verifier runs.
  EXPECT_EQ(call_route(router, gym::http::Method::post, "/verify", "{}").status, 422);
  auto res = call_route(router, gym::http::Method::post, "/aggregate_metrics",
                        R"({"verify_responses":[{"reward":1.0,"extracted_answer":"A"}]})");
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(
      render(json::parse(res.body).at("key_metrics")),
      R"({"mean/reward":1.0,"pass@1[avg-of-1]/accuracy":100.0,"pass@1[avg-of-1]/no_answer":0.0,"pass@1/no_answer":0.0,"majority@1/accuracy":100.0,"pass@1/accuracy":100.0})");
}
