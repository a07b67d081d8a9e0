#pragma once
// --resume: what is done, what failed how often, what runs again.
#include "rollouts/options.h"
#include "rollouts/rows.h"

#include <boost/json/object.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gym::rollouts {

// A rollout to dispatch: a line of the materialized inputs file, read back when it is dispatched.
struct PlannedRollout {
  std::uint64_t offset = 0;   // of its line in the materialized inputs file
  std::int64_t attempts = 0;  // earlier failed attempts: the row's _ng_attempt_index when > 0
};

// A rollout the input now adds to the materialized file (a larger --num-repeats).
struct AddedRollout {
  RolloutKey key;
  std::int64_t attempts = 0;  // failures the sidecar already holds for it
  bool runs = true;           // false: terminal or out of attempts (appended, not dispatched)
};

struct ResumePlan {
  std::vector<PlannedRollout> to_run;  // materialized lines that run again, in order
  // agent -> rollouts this resume dispatches (of to_run and of added).
  std::map<std::string, std::size_t> per_agent;
  // Rows of the rollouts file: results of earlier runs. Only counted: the aggregate metrics read
  // them from the file after the run (rollouts/aggregate.h), so a resume holds no row it keeps.
  std::size_t done = 0;
  // Rollouts the input expands to beyond the materialized ones (e.g. a larger --num-repeats), in
  // the expansion's order: appended to the materialized file when the run starts, and run.
  std::vector<AddedRollout> added;
  std::size_t materialized = 0, terminal = 0, maxed_out = 0;
  std::size_t failure_attempts = 0, failed_keys = 0;
  // Failures that were the model endpoint's (unreachable, 5xx, 429, unavailable): kept in the
  // sidecar but not counted as attempts of their rollouts.
  std::size_t endpoint_outages = 0;
};

// Gives every row the input expands to, in order, to its argument; called at most twice (the
// second time only for the rows a larger --num-repeats adds).
using ExpandedRows = std::function<void(const std::function<void(boost::json::object&&)>& each)>;

// Reads the materialized inputs, the rollouts file and the failures sidecar line by line,
// keeping per rollout only its key, what the sidecar says about it, and where its line starts:
// memory grows with the number of rollouts, not with the size of the files. A last line cut
// short by a crash is removed from the file (its rollout runs again). `expected` is the
// expansion recomputed from the input: rollouts it adds (same rows, more repeats) are run too;
// any other difference is a warning, the materialized file wins. Lines with bytes that are not
// UTF-8 (written by an older gym) are read with U+FFFD in their place.
// Prints the summary of the resume. Throws std::runtime_error on an unreadable file.
ResumePlan plan_resume(const OutputPaths& paths, const ExpandedRows& expected, int max_attempts);
// The same with the expansion at hand (tests).
ResumePlan plan_resume(const OutputPaths& paths, const std::vector<boost::json::object>& expected,
                       int max_attempts);

}  // namespace gym::rollouts
