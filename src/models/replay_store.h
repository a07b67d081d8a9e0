#pragma once
// The recorded rollouts a replay model answers from
// (docs/reference/replay-model.md#how-an-answer-is-found): loading, normalisation, lookup by input
// prefix, choice among candidates, per-session bindings and the answer envelope. Plain data and
// logic, no I/O besides reading the files: one instance per server event loop (not thread-safe).
#include "models/session_bindings.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gym::models {

// How a replayed function_call_output is compared with the recorded one.
enum class ToolOutputCheck { semantic, exact, off };

// A string becomes one user message; items with `role` but no `type` get
// "type":"message"; null object members are removed recursively. A value that is neither a
// string nor a list is returned as an empty list.
boost::json::array normalize_input(const boost::json::value& input);
// The last step of normalize_input alone: a copy of `v` without null object members, recursively.
boost::json::value drop_null_members(const boost::json::value& v);

// Why a replayed item does not match the recorded one (both normalised), or empty when it does.
std::string item_mismatch(const boost::json::object& replayed, const boost::json::object& recorded,
                          ToolOutputCheck check);

struct ReplayAnswer {
  int status = 200;         // 200, or 409 for a replay failure
  boost::json::value body;  // a Response, or {"detail":{"type","message"}}
};

class ReplayStore {
 public:
  using Clock = SessionBindings::Clock;

  explicit ReplayStore(ToolOutputCheck check, SessionBindings bindings = SessionBindings());

  // Loads the rows of one rollouts file; returns how many were kept. Rows without
  // `responses_create_params.input` or a `response.output` list, and failure rows, are skipped
  // with one warning. A line that is not a JSON object, or an unreadable file, throws
  // core::ConfigError naming the file and line.
  std::size_t load_file(const std::string& path);
  // Adds one row; false when it is skipped. `file` and `line` (1-based) name it in messages.
  bool add_row(const boost::json::object& row, const std::string& file, std::size_t line);

  std::size_t size() const { return rows_.size(); }

  // Answers POST /v1/responses with validated create `params` for the replay session
  // `session`.
  ReplayAnswer answer(const boost::json::object& params, std::string_view session,
                      Clock::time_point now = Clock::now());

 private:
  struct Row {
    std::string file;
    std::size_t line = 0;
    std::vector<std::string> input_keys;  // canonical text of each normalised input item
    boost::json::object response;         // the recorded envelope, output included
    boost::json::array output;            // normalised recorded output
    std::uint64_t bindings = 0;           // sessions bound to this row so far
  };
  // A candidate whose input is a prefix of the request's input, and how its recording
  // continues.
  struct Candidate {
    std::size_t row;
    std::size_t continuation;  // |C|, the input items after the recorded input
    std::string mismatch;      // why C is not a replayed prefix; empty when consistent
    std::size_t mismatch_at;   // index in C of the first difference (for choosing a message)
  };

  std::vector<Candidate> candidates(const boost::json::array& input) const;
  std::string continuation_mismatch(const Row& row, const boost::json::array& input,
                                    std::size_t start, std::size_t& at) const;
  ReplayAnswer respond(const Row& row, std::size_t continuation,
                       const boost::json::object& params) const;
  std::string where(const Row& row) const;

  ToolOutputCheck check_;
  SessionBindings bindings_;
  std::vector<Row> rows_;
  std::vector<std::size_t> lengths_;  // distinct |I_R|, ascending
  // (|I_R|, hash of the canonical items of I_R) -> rows, in file order.
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> index_;
};

}  // namespace gym::models
