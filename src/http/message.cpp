#include "http/message.h"
#include "http/verb.h"

#include "core/json_text.h"

#include <boost/json.hpp>

namespace gym::http {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view to_string(Method m) {
  switch (m) {
    case Method::get:
      return "GET";
    case Method::head:
      return "HEAD";
    case Method::post:
      return "POST";
    case Method::put:
      return "PUT";
    case Method::patch:
      return "PATCH";
    case Method::del:
      return "DELETE";
    case Method::options:
      return "OPTIONS";
    case Method::other:
      break;
  }
  return "_OTHER";
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const unsigned x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
    if (x == y) continue;  // names mostly arrive in the case they are looked up in
    // Otherwise equal only as the two cases of one letter (bit 5 apart).
    const unsigned lower = x | 0x20;
    if (lower != (y | 0x20) || lower - 'a' > 'z' - 'a') return false;
  }
  return true;
}

std::string_view find_header(const std::vector<Header>& headers, std::string_view name) {
  for (const auto& h : headers)
    if (iequals(h.name, name)) return h.value;
  return {};
}

Cookies parse_cookie_header(std::string_view value) {
  Cookies out;
  while (!value.empty()) {
    auto semi = value.find(';');
    auto part = trim(value.substr(0, semi));
    value = semi == std::string_view::npos ? std::string_view{} : value.substr(semi + 1);
    auto eq = part.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    auto v = trim(part.substr(eq + 1));
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    out.emplace_back(std::string(trim(part.substr(0, eq))), std::string(v));
  }
  return out;
}

std::string_view Request::cookie(std::string_view name) const {
  for (const auto& h : headers) {
    if (!iequals(h.name, "cookie")) continue;
    std::string_view v = h.value;
    while (!v.empty()) {
      auto semi = v.find(';');
      auto part = trim(v.substr(0, semi));
      v = semi == std::string_view::npos ? std::string_view{} : v.substr(semi + 1);
      auto eq = part.find('=');
      if (eq != std::string_view::npos && trim(part.substr(0, eq)) == name)
        return trim(part.substr(eq + 1));
    }
  }
  return {};
}

Response Response::json(const boost::json::value& v, int status) {
  Response r;
  r.status = status;
  r.body = core::render_json(v);
  return r;
}

Response Response::detail(int status, const boost::json::value& detail) {
  boost::json::object o;
  o["detail"] = detail;
  return json(o, status);
}

std::string routing_path(std::string_view target) {
  auto q = target.find('?');
  std::string_view path = target.substr(0, q);
  constexpr std::string_view kPrefix = "/ng-rollout/";
  if (path.starts_with(kPrefix)) {
    auto rest = path.substr(kPrefix.size());
    auto slash = rest.find('/');
    if (slash != std::string_view::npos && slash > 0) {
      path = rest.substr(slash);  // keeps the leading '/'
      constexpr std::string_view kCapture = "/training-token-capture";
      if (path.starts_with(kCapture) &&
          (path.size() == kCapture.size() || path[kCapture.size()] == '/'))
        path.remove_prefix(kCapture.size());
      if (path.empty()) path = "/";
    }
  }
  return std::string(path);
}

void find_trace_headers(const std::vector<Header>& headers, TraceHeaders& out) {
  // Most requests have none of the three: a name is compared only when its length and first
  // letter are one of theirs (Connection and User-Agent are as long as tracestate).
  const auto is = [](std::string_view name, std::string_view lower) {
    return name.size() == lower.size() && (name[0] | 0x20) == lower[0] && iequals(name, lower);
  };
  // A repeat is rare: the joined list is built only then.
  const auto add = [](std::string_view& list, std::string& joined, std::string_view value) {
    if (list.empty()) {
      list = value;
      return;
    }
    if (joined.empty()) joined = list;
    (joined += ',') += value;
    list = joined;
  };
  for (const Header& h : headers) {
    if (is(h.name, "traceparent")) {
      if (out.traceparent.empty()) out.traceparent = h.value;
    } else if (is(h.name, "tracestate")) {
      add(out.tracestate, out.joined_tracestate, h.value);
    } else if (is(h.name, "baggage")) {
      add(out.baggage, out.joined_baggage, h.value);
    }
  }
}

std::string_view rollout_id_of(std::string_view target) {
  constexpr std::string_view kPrefix = "/ng-rollout/";
  const std::string_view path = target.substr(0, target.find('?'));
  if (!path.starts_with(kPrefix)) return {};
  const auto rest = path.substr(kPrefix.size());
  const auto slash = rest.find('/');
  return slash == std::string_view::npos ? std::string_view() : rest.substr(0, slash);
}

Method to_method(boost::beast::http::verb v) noexcept {
  using boost::beast::http::verb;
  switch (v) {
    case verb::get:
      return Method::get;
    case verb::head:
      return Method::head;
    case verb::post:
      return Method::post;
    case verb::put:
      return Method::put;
    case verb::patch:
      return Method::patch;
    case verb::delete_:
      return Method::del;
    case verb::options:
      return Method::options;
    default:
      return Method::other;
  }
}

}  // namespace gym::http
