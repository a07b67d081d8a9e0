#include "http/url.h"

#include "core/secrets.h"

#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

#include <strings.h>

namespace gym::http {

std::optional<Url> parse_url(std::string_view text, std::string& error) {
  auto r = boost::urls::parse_uri(text);
  if (!r) {
    error = "invalid URL '" + core::masked_url(text) + "': " + r.error().message();
    return std::nullopt;
  }
  const bool tls = r->scheme() == "https";
  if (!tls && r->scheme() != "http") {
    error = "unsupported URL scheme in '" + core::masked_url(text) +
            "': only http:// and https:// are supported";
    return std::nullopt;
  }
  if (r->encoded_host_address().empty()) {
    error = "URL '" + core::masked_url(text) + "' has no host";
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

bool same_origin(std::string_view a, std::string_view b) {
  std::string ignored;
  const auto x = parse_url(a, ignored), y = parse_url(b, ignored);
  return x && y && x->tls == y->tls && x->port == y->port && x->host.size() == y->host.size() &&
         strncasecmp(x->host.data(), y->host.data(), x->host.size()) == 0;
}

std::string origin_of(std::string_view url) {
  std::string ignored;
  const auto u = parse_url(url, ignored);
  if (!u) return std::string(url);
  const bool v6 = u->host.find(':') != std::string::npos;
  return std::string(u->tls ? "https://" : "http://") + (v6 ? "[" : "") + u->host +
         (v6 ? "]" : "") + ":" + u->port;
}

std::string span_url(std::string_view url) {
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed) return std::string(url.substr(0, url.find_first_of("?#")));
  boost::urls::url u(*parsed);
  u.remove_query();
  u.remove_fragment();
  if (u.has_userinfo()) u.set_userinfo("REDACTED:REDACTED");
  return std::string(u.buffer());
}

}  // namespace gym::http
