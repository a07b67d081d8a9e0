#pragma once
// /aggregate_metrics (docs/reference/aggregate-metrics.md): the default statistics of upstream's
// RewardProfiler (nemo_gym/reward_profile.py), the environment hook, and the pass@k family
// (`compute_pass_majority_metrics`, `highest_k_metrics`). Pure functions: no I/O, no state;
// safe to call from any thread.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "python_compat/errors.h"

namespace gym::servers {

// Errors are python_compat's ValueError and KeyError, so a route's 500 body reads like
// upstream's ("ValueError: Duplicate materialized input row for rollout key (0, 0)").

// Verify responses grouped by task: ascending `_ng_task_index`, each task's rollouts in
// ascending `_ng_rollout_index` (a missing index counts as 0). The pointers refer into the
// request's `verify_responses` array and are valid during the hook call only.
using TaskRollouts = std::vector<std::vector<const boost::json::object*>>;

// What an environment adds to the default computation (upstream `compute_metrics` and
// `get_key_metrics`). Both are optional.
struct AggregateMetricsHooks {
  // Extra metrics from all verify responses; merged into `agent_metrics` (an existing key keeps
  // its position and takes the new value). A `per_task_metrics` array of objects carrying
  // `_ng_task_index` is merged into the matching groups of `group_level_metrics` instead.
  std::function<boost::json::object(const TaskRollouts& tasks)> compute_metrics;
  // Chooses `key_metrics` from the final `agent_metrics`; unset: default_key_metrics.
  std::function<boost::json::object(const boost::json::object& agent_metrics)> key_metrics;
};

// The whole /aggregate_metrics answer for `verify_responses`:
// {"group_level_metrics":[...],"agent_metrics":{...},"key_metrics":{...}}. An empty input gives
// empty members and calls no hook. Throws ValueError for an element that is not an object, an
// index that is not an integer, or a duplicate (task, rollout) pair; hooks may throw too.
boost::json::object compute_aggregate_metrics(const boost::json::array& verify_responses,
                                              const AggregateMetricsHooks& hooks = {});

// Every `mean/*` entry of `agent_metrics`, in order (the default key metrics).
boost::json::object default_key_metrics(const boost::json::object& agent_metrics);

// ---- pass@k family (docs/reference/aggregate-metrics.md#passk-family) ----

// Named scores of one rollout, in the score function's order (names unique).
using Scores = std::vector<std::pair<std::string, double>>;
using ScoreFn = std::function<Scores(const boost::json::object& rollout)>;

// The default score function: {"accuracy": reward} (bool as 0/1). Throws KeyError when `reward`
// is missing and ValueError when it is not a number or bool.
Scores accuracy_from_reward(const boost::json::object& rollout);

struct PassMajorityResult {
  // Keys in upstream order: for k = 1..max_k, for each score name: `pass@{k}/{name}`,
  // `pass@1[avg-of-{k}]/{name}`, `majority@{k}/{name}`; then `per_sample_aggregate`; then for
  // k = 2..max_k and each name the `pass@1[avg-of-{k}]/{name}/std_dev_across_runs` and
  // `…/std_err_across_runs` pair. Empty when `tasks` is empty.
  boost::json::object metrics;
  std::vector<std::string> score_names;  // sorted
  std::size_t max_k = 0;                 // most rollouts of one task
};

// Upstream `compute_pass_majority_metrics`: pass@k (combinatorial for 0/1 scores, else the max
// of the first k), pass@1[avg-of-k], majority@k and the `no_answer` score (only with
// `answer_key`: 1 when the rollout's answer is null or missing), per_sample_aggregate, and the
// spread across runs. Values are percentages except the std ones (which are spreads of
// percentages). Averages use Python's float `sum` (compensated), so results equal upstream's.
// `score_fn` unset means accuracy_from_reward.
PassMajorityResult compute_pass_majority_metrics(const TaskRollouts& tasks,
                                                 const ScoreFn& score_fn = {},
                                                 std::optional<std::string_view> answer_key = {});

// Upstream `highest_k_metrics`: among the keys `<pattern with {k} = digits>/<score name>`
// (std_dev_across_runs, std_err_across_runs and avg_sample_std_dev entries excluded; only
// `score_names` when given; never `exclude_names`), those at the largest k, in
// `agent_metrics` order. Example: pattern "pass@1[avg-of-{k}]".
boost::json::object highest_k_metrics(
    const boost::json::object& agent_metrics, std::string_view pattern,
    const std::optional<std::vector<std::string>>& score_names = std::nullopt,
    const std::optional<std::vector<std::string>>& exclude_names = std::nullopt);

// ---- numeric building blocks, exposed for tests ----

// numpy's pairwise summation of float64 (what pandas' mean and std sum with).
double numpy_pairwise_sum(std::span<const double> values);
// Python's built-in sum() of floats (CPython >= 3.12: Neumaier-compensated).
double python_float_sum(std::span<const double> values);
// C(bad, k) / C(n, k), correctly rounded like Python's int / int (0 <= bad <= n, k <= n).
double binomial_ratio(std::size_t bad, std::size_t n, std::size_t k);

}  // namespace gym::servers
