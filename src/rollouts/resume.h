#pragma once
// --resume (runtime.md 7.7): what is done, what failed how often, what runs again.
#include "rollouts/options.h"

#include <boost/json/object.hpp>

#include <vector>

namespace gym::rollouts {

struct ResumePlan {
  std::vector<boost::json::object> to_run;  // materialized rows, _ng_attempt_index stamped
  std::vector<boost::json::object> done;    // rows of the rollouts file (stripped, 7.9)
  // Rollouts the input expands to beyond the materialized ones (e.g. a larger --num-repeats):
  // appended to the materialized file when the run starts, and run (they are in to_run too).
  std::vector<boost::json::object> added;
  std::size_t materialized = 0, terminal = 0, maxed_out = 0;
  std::size_t failure_attempts = 0, failed_keys = 0;
  // Failures that were the model endpoint's (unreachable, 5xx, 429, unavailable): kept in the
  // sidecar but not counted as attempts of their rollouts.
  std::size_t endpoint_outages = 0;
};

// Reads the materialized inputs, the rollouts file and the failures sidecar. A last line cut
// short by a crash is removed from the file (its rollout runs again). `expected` is the
// expansion recomputed from the input: rollouts it adds (same rows, more repeats) are run too;
// any other difference is a warning, the materialized file wins.
// Prints the summary of 7.7. Throws std::runtime_error on an unreadable file.
ResumePlan plan_resume(const OutputPaths& paths, const std::vector<boost::json::object>& expected,
                       int max_attempts);

}  // namespace gym::rollouts
