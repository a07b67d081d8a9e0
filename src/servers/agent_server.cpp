#include "servers/agent_server.h"

#include "servers/handler_span.h"
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
  router.post("/run",
              http::json_route(
                  [&ctx, rollout = std::move(rollout)](
                      http::Request& req, json::value& body) -> asio::awaitable<http::Response> {
                    HandlerTimer timer([&ctx](double ms) {
                      if (ctx.metrics) ctx.metrics->record_rollout(ms);
                    });
                    HandlerSpan span(ctx, telemetry::SpanGroup::rollout, "gym.rollout", req, &body);
                    co_return co_await answer_in(span, rollout, req, body);
                  },
                  std::move(schema)));
}

http::Response downstream_failure(const std::string& cookie_name, const DownstreamError& e) {
  return http::Response::json(
      json::string("Hit an exception in " + cookie_name +
                   " calling an inner server: " + (e.target().empty() ? "" : e.target() + ": ") +
                   std::to_string(e.status()) + " " + e.body()),
      500);
}

void require_success(const http::ClientResponse& r, std::string_view instance,
                     std::string_view route) {
  if (r.status >= 200 && r.status <= 299) return;
  std::string target;
  if (!instance.empty()) target = std::string(instance) + " POST " + std::string(route);
  throw DownstreamError(r.status, r.body, std::move(target));
}

}  // namespace gym::servers
