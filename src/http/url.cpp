#include "http/url.h"

#include <boost/url/parse.hpp>

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
  u.port = r->has_port() ? std::string(r->port()) : tls ? "443" : "80";
  u.target = r->encoded_path().empty() ? "/" : std::string(r->encoded_path());
  if (r->has_query()) u.target += "?" + std::string(r->encoded_query());
  return out;
}

std::string resolve_location(const Url& base, std::string_view location) {
  if (location.starts_with("http://") || location.starts_with("https://"))
    return std::string(location);
  std::string prefix = (base.tls ? "https://" : "http://") + base.host + ":" + base.port;
  if (location.starts_with("/")) return prefix + std::string(location);
  auto path = base.target.substr(0, base.target.find('?'));
  return prefix + path.substr(0, path.rfind('/') + 1) + std::string(location);
}

}  // namespace gym::http
