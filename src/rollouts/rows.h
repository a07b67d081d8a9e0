#pragma once
// Input rows and their expansion (runtime.md 7.2, 7.3), and the JSONL files of a collection.
#include "rollouts/options.h"

#include <boost/json/object.hpp>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gym::rollouts {

// (task index, rollout index): the identity of one rollout across runs and files.
using RolloutKey = std::pair<std::int64_t, std::int64_t>;
// Throws std::runtime_error when the row has no integer indices.
RolloutKey key_of(const boost::json::object& row);
// agent_ref.name, or "" when absent.
std::string agent_of(const boost::json::object& row);

// A line of a JSONL file that is not a JSON object; what() names the file and the line.
struct JsonlLineError : std::runtime_error {
  JsonlLineError(const std::string& message, std::size_t line_number)
      : std::runtime_error(message), line(line_number) {}
  std::size_t line;  // 1-based
};

// Reads every line of `path` up to `max_lines` non-blank lines (none: all). A line that is not
// a JSON object, or longer than `max_line_bytes` (0: no limit; the line is never held whole),
// throws JsonlLineError naming the file and line number.
struct JsonlLine {
  std::size_t number = 0;  // 1-based line number
  std::string raw;         // the line's bytes including its newline, when it had one
  boost::json::object row;
};
std::vector<JsonlLine> read_jsonl(const std::filesystem::path& path,
                                  std::optional<std::int64_t> max_lines = std::nullopt,
                                  std::size_t max_line_bytes = 0);

// Checks every input row (7.2) and reports all offending lines in one core::ConfigError; then
// expands them (7.3): agent_ref from --agent, create-params overrides, task and rollout indices,
// num_repeats consecutive copies, optional seeds. `agents` are the responses_api_agents
// instances the rows may name.
std::vector<boost::json::object> expand_rows(const std::filesystem::path& input,
                                             const std::vector<JsonlLine>& lines,
                                             const CollectionOptions& options,
                                             const std::vector<std::string>& agents);

// Writes rows as compact JSON, one per line (replacing the file).
void write_jsonl(const std::filesystem::path& path, const std::vector<boost::json::object>& rows,
                 bool append = false);

}  // namespace gym::rollouts
