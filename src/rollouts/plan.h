#pragma once
// The rows a collection dispatches (runtime.md 7.3, 7.7): a fresh expansion of the input, or
// what --resume leaves of an earlier run.
#include "rollouts/options.h"

#include <boost/json/object.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace gym::rollouts {

struct Plan {
  std::vector<boost::json::object> rows;  // to dispatch, in materialized order
  std::size_t done = 0;  // results of an earlier run kept by --resume (rows of the rollouts file)
  bool fresh = false;    // not a resumed run: prepare_output_files starts the files anew
  // A resumed run: rollouts the input now adds (more repeats), appended to the materialized file
  // by prepare_output_files; and rollouts left without a result (terminal, or out of attempts).
  std::vector<boost::json::object> added;
  std::size_t without_result = 0;
};

// Reads and expands `input` for the agents `agents` (the responses_api_agents instances): a
// fresh run, or with `resume` and both the materialized inputs and the rollouts file present,
// what is left of the earlier run (the resumed rows must name agents of `agents`). Writes no
// file. Prints what it does, as upstream does. Throws core::ConfigError for unusable or empty
// input and std::runtime_error for unreadable files.
Plan plan_rows(const CollectionOptions& options, const OutputPaths& paths,
               const std::filesystem::path& input, const std::vector<std::string>& agents);

// For a fresh plan: writes the materialized inputs and removes the rollouts, failures and
// aggregate-metrics files of an earlier run. Call it only once the run is certain to start (the
// deployment is ready), so a run that fails to start leaves the earlier results as they were.
void prepare_output_files(const Plan& plan, const CollectionOptions& options,
                          const OutputPaths& paths);

}  // namespace gym::rollouts
