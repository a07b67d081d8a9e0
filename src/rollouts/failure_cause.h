#pragma once
// The innermost cause of a failed /run (issue 13.11). An agent that fails calling a model or
// resources server answers 500 with the JSON string "Hit an exception in <cookie name> calling
// an inner server: <status> <body>", and <body> may be such a chain again; what the user needs is
// the last link: the status and the error type and message the failing server gave.
#include <optional>
#include <string>

namespace gym::rollouts {

struct FailureCause {
  std::optional<int> status;  // the innermost HTTP status
  std::string type;           // e.g. "replay_no_match" (`detail.type` or `error.type`), or ""
  std::string message;        // the innermost message, one line
  std::string via;            // the server that made the failing call (its cookie name), or ""

  // One line: "HTTP 409 replay_no_match: no recorded input ... (called by SimpleAgent___x)".
  std::string text() const;
};

// The innermost cause within a /run answer of `status` with `body`, or none when the body holds
// nothing beyond the status itself (e.g. an empty body).
std::optional<FailureCause> innermost_cause(int status, const std::string& body);

}  // namespace gym::rollouts
