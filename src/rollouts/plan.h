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
  std::vector<boost::json::object> done;  // results of an earlier run kept by --resume
};

// Reads and expands `input` for the agents `agents` (the responses_api_agents instances). A
// fresh run writes the materialized inputs and removes the rollouts and failures files; with
// `resume` and both files present it plans what is left instead, and the resumed rows must
// name agents of `agents`. Prints what it does, as upstream does. Throws core::ConfigError for
// unusable input and std::runtime_error for unreadable files.
Plan plan_rows(const CollectionOptions& options, const OutputPaths& paths,
               const std::filesystem::path& input, const std::vector<std::string>& agents);

}  // namespace gym::rollouts
