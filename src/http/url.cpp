#include "http/url.h"

#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

namespace gym::http {

std::optional<Url> parse_url(std::string_view text, std::string& error) {
  auto r = boost::urls::parse_uri(text);
  if (!r) {
    error = "invalid URL '" + std::string(text) + "': " + r.error().message();
    return std::nullopt;
  }
  const bool tls = r->scheme() == "https";
  if (!tls && r->scheme() != "http") {
    error = "unsupported URL scheme in '" + std::string(text) +
            "': only http:// and https:// are supported";
    return std::nullopt;
  }
  if (r->encoded_host_address().empty()) {
    error = "URL '" + std::string(text) + "' has no host";
    return std::nullopt;
  }
  std::optional<Url> out(std::in_place);  // returned in place, its strings never copied
  Url& u = *out;
  u.tls = tls;
  u.host = r->host_address();
  // An empty port ("http://host:/") is the scheme's default (RFC 3986 section 6.2.3).
  u.port = !r->port().empty() ? std::string(r->port()) : tls ? "443" : "80";
  u.target = r->encoded_path().empty() ? "/" : std::string(r->encoded_path());
  if (r->has_query()) u.target += "?" + std::string(r->encoded_query());
  return out;
}

std::string resolve_location(std::string_view base, std::string_view location) {
  auto from = boost::urls::parse_uri(base);
  auto ref = boost::urls::parse_uri_reference(location);
  if (!from || !ref) return std::string(location);
  boost::urls::url resolved;
  if (!boost::urls::resolve(*from, *ref, resolved)) return std::string(location);
  return std::string(resolved.buffer());
}

}  // namespace gym::http
