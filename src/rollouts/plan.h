#pragma once
// The rollouts a collection dispatches (docs/design/failures-and-retries.md#resume-and-attempts): a
// fresh expansion of the input, or what --resume leaves of an earlier run. A plan holds no row: it
// names lines of the materialized inputs file (16 bytes a rollout), and the rows are read back from
// that file one at a time as they are dispatched, so the collector's memory does not grow with the
// run.
#include "rollouts/options.h"
#include "rollouts/resume.h"

#include <boost/json/object.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gym::rollouts {

struct Plan {
  // The lines of the materialized file to dispatch, in order. A fresh plan gets them from
  // prepare_output_files, which writes that file; a resumed one from plan_resume (and the lines
  // prepare_output_files appends for `added`).
  std::vector<PlannedRollout> rollouts;
  std::map<std::string, std::size_t> per_agent;  // agent -> rollouts to dispatch
  std::size_t done = 0;  // results of an earlier run kept by --resume (rows of the rollouts file)
  bool fresh = false;    // not a resumed run: prepare_output_files starts the files anew
  // A resumed run: rollouts the input now adds (more repeats), appended to the materialized file
  // by prepare_output_files; and rollouts left without a result (terminal, or out of attempts).
  std::vector<AddedRollout> added;
  std::size_t without_result = 0;
  std::filesystem::path input;
  ExpandedRows expansion;  // the input's expansion, computed again by prepare_output_files

  // The rollouts this run dispatches.
  std::size_t to_dispatch() const;
};

// Reads and expands `input` for the agents `agents` (the responses_api_agents instances): a
// fresh run, or with `resume` and both the materialized inputs and the rollouts file present,
// what is left of the earlier run (the resumed rows must name agents of `agents`). The input is
// read line by line. Writes no file. Prints what it does, as upstream does. Throws
// core::ConfigError for unusable or empty input and std::runtime_error for unreadable files.
Plan plan_rows(const CollectionOptions& options, const OutputPaths& paths,
               const std::filesystem::path& input, const std::vector<std::string>& agents);

// For a fresh plan: writes the materialized inputs (the expansion, streamed) and removes the
// rollouts, failures and aggregate-metrics files of an earlier run; for a resumed one, appends the
// added rollouts. Either way the plan's `rollouts` then name every line to dispatch. Call it only
// once the run is certain to start (the deployment is ready), so a run that fails to start leaves
// the earlier results as they were. Throws std::runtime_error when the file cannot be written or
// the input changed since it was planned.
void prepare_output_files(Plan& plan, const CollectionOptions& options, const OutputPaths& paths);

// The planned rows, read back from the materialized file in order, each with its
// `_ng_attempt_index` when earlier attempts failed. Not thread-safe.
class PlannedRows {
 public:
  PlannedRows(const std::filesystem::path& materialized, std::vector<PlannedRollout> rollouts);

  std::size_t size() const { return rollouts_.size(); }
  // The next row; none after the last. Throws std::runtime_error when the file changed under it.
  std::optional<boost::json::object> next();

 private:
  std::filesystem::path path_;
  std::vector<PlannedRollout> rollouts_;
  std::size_t next_ = 0;
  std::ifstream in_;
  std::uint64_t position_ = 0;  // where `in_` reads next: no seek for consecutive lines
  std::string line_;
};

}  // namespace gym::rollouts
