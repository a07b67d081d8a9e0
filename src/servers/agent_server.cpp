#include "servers/agent_server.h"

#include "servers/handler_timing.h"

#include <boost/json.hpp>

namespace gym::servers {
namespace asio = boost::asio;
namespace json = boost::json;

void add_agent_base_routes(http::Router& router) {
  router.get("/", [](http::Request&) -> asio::awaitable<http::Response> {
    co_return http::Response::json(json::object{{"status", "ok"}});
  });
}

std::shared_ptr<const http::Schema> run_request_schema() {
  static const auto schema = std::make_shared<const http::Schema>(http::Schema::object_of(
      {{"responses_create_params", http::Schema::of(http::Schema::Kind::dict), true}}));
  return schema;
}

void add_run_route(ServerContext& ctx, http::Router& router, http::JsonHandler rollout,
                   std::shared_ptr<const http::Schema> schema) {
  router.post("/run", http::json_route(
                          [&ctx, rollout = std::move(rollout)](
                              http::Request& req, json::value& body) -> asio::awaitable<http::Response> {
                            HandlerTimer timer([&ctx](double ms) {
                              if (ctx.metrics) ctx.metrics->record_rollout(ms);
                            });
                            co_return co_await rollout(req, body);
                          },
                          std::move(schema)));
}

http::Response downstream_failure(const std::string& cookie_name, const DownstreamError& e) {
  return http::Response::json(json::string("Hit an exception in " + cookie_name +
                                           " calling an inner server: " +
                                           std::to_string(e.status()) + " " + e.body()),
                              500);
}

void require_success(const http::ClientResponse& r) {
  if (r.status < 200 || r.status > 299) throw DownstreamError(r.status, r.body);
}

std::string utf8_replace_invalid(std::string_view s) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k)
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && len > 1) {
      // Reject overlong forms, surrogates and code points above U+10FFFF.
      std::uint32_t cp = c & (0xFF >> (len + 1));
      for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      ok = !(len == 2 && cp < 0x80) && !(len == 3 && cp < 0x800) && !(len == 4 && cp < 0x10000) &&
           !(cp >= 0xD800 && cp <= 0xDFFF) && cp <= 0x10FFFF;
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += kReplacement;
      ++i;
    }
  }
  return out;
}

}  // namespace gym::servers
