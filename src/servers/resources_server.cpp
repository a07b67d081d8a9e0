#include "servers/resources_server.h"

#include "servers/handler_span.h"
#include "servers/handler_timing.h"
#include "servers/responses_api.h"

#include <boost/json.hpp>

namespace gym::servers {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;
using http::Schema;

void add_resources_base_routes(http::Router& router, std::string reverify_mode,
                               AggregateMetricsHooks aggregate_hooks) {
  router.get("/", [](Request&) -> asio::awaitable<Response> {
    co_return Response::json(json::object{{"status", "ok"}});
  });
  router.post("/seed_session",
              http::json_route([](Request&, json::value&) -> asio::awaitable<Response> {
                co_return Response::json(json::object{});
              }));
  router.get("/reverify_mode",
             [mode = std::move(reverify_mode)](Request&) -> asio::awaitable<Response> {
               co_return Response::json(json::string(mode));
             });
  router.post("/aggregate_metrics",
              http::json_route(
                  [hooks = std::move(aggregate_hooks)](
                      Request&, json::value& body) -> asio::awaitable<Response> {
                    const json::array& rows = body.get_object().at("verify_responses").get_array();
                    co_return Response::json(compute_aggregate_metrics(rows, hooks));
                  },
                  aggregate_metrics_request_schema()));
}

void add_verify_route(ServerContext& ctx, http::Router& router, http::JsonHandler verifier,
                      std::shared_ptr<const Schema> schema) {
  router.post("/verify", http::json_route(
                             [&ctx, verifier = std::move(verifier)](
                                 Request& req, json::value& body) -> asio::awaitable<Response> {
                               bool completed = false;
                               HandlerTimer timer([&](double ms) {
                                 if (ctx.metrics) ctx.metrics->record_verify(ms, completed);
                               });
                               HandlerSpan span(ctx, telemetry::SpanGroup::verify, "gym.verify",
                                                req, &body);
                               Response res = co_await answer_in(span, verifier, req, body);
                               completed = res.status >= 200 && res.status < 300;
                               co_return res;
                             },
                             std::move(schema)));
}

void register_environment(Registry& registry, Environment environment) {
  registry.add({"resources_servers", environment.name, environment.class_name,
                [env = std::move(environment)](ServerContext& ctx, http::Router& router) {
                  add_resources_base_routes(router, env.reverify_mode, env.aggregate_hooks);
                  VerifyRoute verify = env.add_routes(ctx, router);
                  add_verify_route(ctx, router, std::move(verify.verifier),
                                   std::move(verify.schema));
                }});
}

std::shared_ptr<const Schema> aggregate_metrics_request_schema() {
  static const auto schema = std::make_shared<const Schema>(Schema::object_of({
      {"verify_responses", Schema::list_of(Schema::of(Schema::Kind::dict)), true},
  }));
  return schema;
}

std::shared_ptr<const Schema> verify_request_schema() {
  static const auto schema = std::make_shared<const Schema>(Schema::object_of({
      {"responses_create_params", Schema::of(Schema::Kind::dict), true},
      // A Response's `output` is a list of items; verifiers walk it.
      {"response",
       Schema::object_of({{"output", Schema::list_of(Schema::of(Schema::Kind::dict)), true}}),
       true},
  }));
  return schema;
}

std::shared_ptr<const Schema> verify_request_schema(std::vector<http::SchemaField> fields) {
  std::vector<http::SchemaField> all = verify_request_schema()->fields;
  for (auto& f : fields) all.push_back(std::move(f));
  return std::make_shared<const Schema>(Schema::object_of(std::move(all)));
}

json::object verify_response(const json::object& request, double reward) {
  json::object out;
  // Upstream validates the params into its model, so the echo carries every field.
  out["responses_create_params"] =
      expand_create_params(request.at("responses_create_params").as_object());
  out["response"] = request.at("response");
  out["reward"] = reward;
  return out;
}

}  // namespace gym::servers
