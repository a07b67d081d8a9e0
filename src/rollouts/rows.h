#pragma once
// Input rows and their expansion, and the JSONL files of a collection
// (docs/design/wire-compatibility.md#collection-files).
#include "rollouts/options.h"

#include <boost/json/object.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
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

// A non-blank line of a JSONL file.
struct JsonlLine {
  std::size_t number = 0;    // 1-based line number
  std::uint64_t offset = 0;  // of its first byte in the file
  std::string raw;           // the line's bytes including its newline, when it had one
  boost::json::object row;
};

struct JsonlReading {
  std::optional<std::int64_t> max_lines;  // read up to this many non-blank lines (none: all)
  std::size_t max_line_bytes = 0;         // a longer line is an error (0: no limit)
  // A file gym wrote itself: bytes that are not UTF-8 (an older gym copied an endpoint's Latin-1
  // error page into a failure row) are read as U+FFFD instead of making the line unreadable.
  bool repair_utf8 = false;

  // How gym reads back the output files it wrote (rollouts, failures, materialized inputs).
  static JsonlReading own_file() {
    JsonlReading how;
    how.repair_utf8 = true;
    return how;
  }
};

// Calls `each` with every non-blank line of `path`, in order, one at a time: the memory used is
// that of the longest line, whatever the size of the file (`each` may move from the line). A line
// that is not a JSON object, or longer than `max_line_bytes` (the line is never held whole),
// throws JsonlLineError naming the file and line number.
void for_each_jsonl(const std::filesystem::path& path, const std::function<void(JsonlLine&)>& each,
                    const JsonlReading& how = {});
// Every line of `path` (as for_each_jsonl), up to `max_lines` non-blank lines.
std::vector<JsonlLine> read_jsonl(const std::filesystem::path& path,
                                  std::optional<std::int64_t> max_lines = std::nullopt,
                                  std::size_t max_line_bytes = 0);

// Calls `each` with every non-blank line of a collection's input, one at a time, as --limit
// (options.limit) and http_max_request_body_bytes (options.max_row_bytes) allow: the input is never
// held whole. An unreadable file or line is a core::ConfigError starting "input: ".
void for_each_input_line(const std::filesystem::path& input, const CollectionOptions& options,
                         const std::function<void(JsonlLine&)>& each);
// Checks every input row as for_each_input_line reads it and reports the offending lines in
// one core::ConfigError. `agents` are the responses_api_agents instances the rows may name.
// Returns the number of input rows.
std::size_t check_rows(const std::filesystem::path& input, const CollectionOptions& options,
                       const std::vector<std::string>& agents);
// Expands checked rows, reading the input again: agent_ref from --agent, create-params
// overrides, task and rollout indices, num_repeats consecutive copies, optional seeds; `each`
// gets every expanded row in order, one at a time, so no caller needs to hold the expansion.
void for_each_expanded_row(const std::filesystem::path& input, const CollectionOptions& options,
                           const std::function<void(boost::json::object&&)>& each);
// check_rows, then every row for_each_expanded_row gives (for tests and small inputs).
std::vector<boost::json::object> expand_rows(const std::filesystem::path& input,
                                             const CollectionOptions& options,
                                             const std::vector<std::string>& agents);

// Writes rows as compact JSON, one per line (replacing the file).
void write_jsonl(const std::filesystem::path& path, const std::vector<boost::json::object>& rows,
                 bool append = false);

}  // namespace gym::rollouts
