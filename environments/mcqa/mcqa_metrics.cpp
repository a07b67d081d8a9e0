#include "mcqa/mcqa_metrics.h"

#include <boost/json.hpp>

#include <string>
#include <vector>

namespace gym::environments {
namespace json = boost::json;

json::object mcqa_compute_metrics(const servers::TaskRollouts& tasks) {
  return servers::compute_pass_majority_metrics(tasks, servers::accuracy_from_reward,
                                                "extracted_answer")
      .metrics;
}

json::object mcqa_key_metrics(const json::object& agent_metrics) {
  json::object key;
  auto update = [&key](const json::object& more) {
    for (const auto& kv : more) key[kv.key()] = kv.value();
  };
  if (const json::value* v = agent_metrics.if_contains("mean/reward")) key["mean/reward"] = *v;
  update(servers::highest_k_metrics(agent_metrics, "pass@1[avg-of-{k}]",
                                    std::vector<std::string>{"accuracy", "no_answer"}));
  update(
      servers::highest_k_metrics(agent_metrics, "pass@{k}", std::vector<std::string>{"no_answer"}));
  update(servers::highest_k_metrics(agent_metrics, "majority@{k}",
                                    std::vector<std::string>{"accuracy"}));
  if (const json::value* v = agent_metrics.if_contains("pass@1/accuracy"))
    key["pass@1/accuracy"] = *v;
  return key;
}

servers::AggregateMetricsHooks mcqa_aggregate_hooks() {
  return {mcqa_compute_metrics, mcqa_key_metrics};
}

}  // namespace gym::environments
