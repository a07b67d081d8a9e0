#pragma once
// --resume (runtime.md 7.7): what is done, what failed how often, what runs again.
#include "rollouts/options.h"

#include <boost/json/object.hpp>

#include <vector>

namespace gym::rollouts {

struct ResumePlan {
  std::vector<boost::json::object> to_run;  // materialized rows, _ng_attempt_index stamped
  std::vector<boost::json::object> done;    // rows of the rollouts file (stripped, 7.9)
  std::size_t materialized = 0, terminal = 0, maxed_out = 0;
  std::size_t failure_attempts = 0, failed_keys = 0;
};

// Reads the materialized inputs, the rollouts file and the failures sidecar. A last line cut
// short by a crash is removed from the file (its rollout runs again). `expected` is the
// expansion recomputed from the input: a difference is a warning, the materialized file wins.
// Prints the summary of 7.7. Throws std::runtime_error on an unreadable file.
ResumePlan plan_resume(const OutputPaths& paths, const std::vector<boost::json::object>& expected,
                       int max_attempts);

}  // namespace gym::rollouts
