#pragma once
// The innermost cause of a failed /run (issue 13.11). An agent that fails calling a model or
// resources server answers 500 with the JSON string "Hit an exception in <cookie name> calling
// an inner server: <status> <body>" (gym-cpp's agents write "...: <instance> POST <route>:
// <status> <body>"), and <body> may be such a chain again; what the user needs is
// the last link: the status and the error type and message the failing server gave.
#include <optional>
#include <string>
#include <string_view>

namespace gym::rollouts {

struct FailureCause {
  std::optional<int> status;  // the innermost HTTP status
  std::string type;           // e.g. "replay_no_match" (`detail.type` or `error.type`), or ""
  std::string message;        // the innermost message, one line
  std::string via;            // the server that made the failing call (its cookie name), or ""
  std::string callee;         // the failing call, "<instance> POST <route>", or "" (upstream)

  // One line: "HTTP 409 replay_no_match: no recorded input ... (from policy_model POST
  // /v1/responses, called by SimpleAgent___x)"; without a callee "(called by ...)".
  std::string text() const;
};

// The innermost cause within a /run answer of `status` with `body`, or none when the body holds
// nothing beyond the status itself (e.g. an empty body).
std::optional<FailureCause> innermost_cause(int status, const std::string& body);

// What went wrong with a model endpoint, when the innermost cause is a model server's failed call
// to it. The model servers word those failures "model endpoint <url> gave no answer: ...",
// "model endpoint <url> answered HTTP <status>: ..." and "model endpoint <url> is unavailable:
// ..." (models/upstream_client.cpp); this reads them back.
enum class EndpointFault {
  unreachable,   // no answer: refused, reset, timed out
  server_error,  // 5xx after the model server's retries
  rate_limited,  // 429 after the retry budget
  unavailable,   // the model server declared the endpoint down (model_endpoint_unavailable_seconds)
  rejected,      // another 4xx: the key, the model name, the request
};
std::string_view to_string(EndpointFault fault);
// Reads a fault name back (a failure row's `_ng_failure_endpoint_fault`); none when unknown.
std::optional<EndpointFault> endpoint_fault_named(std::string_view name);

struct EndpointFailure {
  EndpointFault fault;
  std::string url;  // the endpoint URL the model server called
  int status = 0;   // the endpoint's HTTP status; 0 when it gave none
};
std::optional<EndpointFailure> endpoint_failure_of(const FailureCause& cause);

// The endpoint's faults, not the row's: such a failure does not use up one of the row's attempts
// (NEMO_GYM_MAX_ROLLOUT_ATTEMPTS) and the run is resumed without limit.
bool is_endpoint_outage(EndpointFault fault);

}  // namespace gym::rollouts
