#pragma once
// Plain request/response types shared by the server, the router and handlers.
// No Beast types here: handlers and their callers compile without Beast headers.
#include <boost/json/value.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "telemetry/traces/trace_context.h"

namespace gym::http {

enum class Method { get, head, post, put, patch, del, options, other };

std::string_view to_string(Method m);  // "GET", ...; "_OTHER" for Method::other

struct Header {
  std::string name;
  std::string value;
};

// Header names compared as HTTP compares them: ASCII letters case-insensitively, nothing else
// folded (no locale).
bool iequals(std::string_view a, std::string_view b) noexcept;

// Case-insensitive header lookup; empty when absent.
std::string_view find_header(const std::vector<Header>& headers, std::string_view name);

// The W3C trace context headers of a request, found in one pass: the first `traceparent`, and every
// `tracestate` and every `baggage` header joined by commas, as W3C reads repeated ones. The views
// point into the headers or into this object (not copyable).
struct TraceHeaders {
  TraceHeaders() = default;
  TraceHeaders(const TraceHeaders&) = delete;
  TraceHeaders& operator=(const TraceHeaders&) = delete;

  std::string_view traceparent, tracestate, baggage;
  std::string joined_tracestate, joined_baggage;  // only when a header repeats
};
void find_trace_headers(const std::vector<Header>& headers, TraceHeaders& out);

using Cookies = std::vector<std::pair<std::string, std::string>>;

// Parses a `Cookie:` header value ("a=1; b=2").
Cookies parse_cookie_header(std::string_view value);

struct Request {
  Method method = Method::get;
  std::string target;  // as received, e.g. "/ng-rollout/abc/verify?x=1"
  std::string path;    // routing path: no query, no /ng-rollout/<id>/ prefix (as NeMo Gym)
  std::vector<Header> headers;
  std::string body;
  std::string session_id;  // set by the session middleware when the server has one
  std::string_view route;  // matched route template ("/verify", "/{path}"); empty for 404/405
  // The trace the handler works in: the SERVER span's context when the `server` group is on,
  // baggage, and the rollout id of a `/ng-rollout/<id>/` prefix. Route wrappers that start a
  // semantic span (gym.rollout, gym.verify, ...) replace it with theirs, and outbound calls pass it
  // on (ClientRequest::trace).
  telemetry::TraceContext trace;

  std::string_view header(std::string_view name) const { return find_header(headers, name); }
  std::string_view cookie(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<Header> headers;  // extra headers, e.g. Set-Cookie

  // A JSON response rendered the NeMo Gym way (core/json_text.h).
  static Response json(const boost::json::value& v, int status = 200);
  // `{"detail": <detail>}` error bodies
  // (docs/design/wire-compatibility.md#error-statuses-and-bodies).
  static Response detail(int status, const boost::json::value& detail);
};

// Strips `/ng-rollout/<id>/` and an optional `training-token-capture/` and the query string.
std::string routing_path(std::string_view target);
// The <id> of a `/ng-rollout/<id>/` prefix; empty when the target has none.
std::string_view rollout_id_of(std::string_view target);

}  // namespace gym::http
