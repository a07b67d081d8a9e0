#pragma once
// http:// and https:// URLs of the HTTP client, parsed with Boost.URL.
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

// Resolves a Location header against the URL it came from.
std::string resolve_location(const Url& base, std::string_view location);

}  // namespace gym::http
