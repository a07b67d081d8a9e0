#pragma once
// http:// and https:// URLs, parsed and resolved with Boost.URL (RFC 3986), never by hand.
#include <optional>
#include <string>
#include <string_view>

namespace gym::http {

struct Url {
  bool tls = false;    // https
  std::string host;    // a name or an IP address (IPv6 without brackets)
  std::string port;    // the URL's, else 80 or 443
  std::string target;  // path + query; "/" when the path is empty
};

// Parses an absolute http:// or https:// URL with a host. On failure returns nullopt and sets
// `error` to why, e.g. "unsupported URL scheme in 'ftp://x': only http:// and https:// are
// supported".
std::optional<Url> parse_url(std::string_view text, std::string& error);

// A Location header resolved against the URL of the request it answered (RFC 3986 section 5):
// an absolute URL replaces it, "/path" keeps its origin, "path" goes beside its last segment.
// A location that is not a URI reference is returned as is (parsing it then says why).
std::string resolve_location(std::string_view base, std::string_view location);

// Whether two URLs have one origin (RFC 6454): the same scheme, host (case-insensitive) and port
// (the scheme's default when none is written). A URL that does not parse has no origin in common
// with any.
bool same_origin(std::string_view a, std::string_view b);

// "scheme://host:port" of a URL, for messages (no userinfo, path or query); the text as is when it
// does not parse.
std::string origin_of(std::string_view url);

// The URL as the span attribute url.full carries it: without its query and fragment (they may
// hold keys), and a userinfo replaced by REDACTED:REDACTED (the OpenTelemetry semantic
// conventions forbid credentials in url.full).
std::string span_url(std::string_view url);

}  // namespace gym::http
