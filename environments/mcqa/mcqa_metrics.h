#pragma once
// mcqa's additions to /aggregate_metrics (README.md here): upstream's compute_metrics and
// get_key_metrics of MCQAResourcesServer.
#include "servers/aggregate_metrics.h"

#include <boost/json/object.hpp>

namespace gym::environments {

// The pass@k family with score `accuracy` = reward and answer key `extracted_answer` (so
// `no_answer` is scored too), including `per_sample_aggregate`.
boost::json::object mcqa_compute_metrics(const servers::TaskRollouts& tasks);
// In this order: `mean/reward`; the highest-k `pass@1[avg-of-{k}]` entries of accuracy and
// no_answer; the highest-k `pass@{k}/no_answer`; the highest-k `majority@{k}/accuracy`;
// `pass@1/accuracy`. With one rollout per task: mean/reward, pass@1[avg-of-1]/accuracy,
// pass@1[avg-of-1]/no_answer, pass@1/no_answer, majority@1/accuracy, pass@1/accuracy.
boost::json::object mcqa_key_metrics(const boost::json::object& agent_metrics);
servers::AggregateMetricsHooks mcqa_aggregate_hooks();

}  // namespace gym::environments
