#pragma once
// The routes every resources server has
// (docs/design/wire-compatibility.md#server-kinds-and-routes); environments add their tools and
// their /verify on top.
#include "http/router.h"
#include "servers/aggregate_metrics.h"
#include "servers/registry.h"

#include <boost/json/object.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gym::servers {

// GET / liveness, POST /seed_session answering {}, GET /reverify_mode answering
// `reverify_mode` ("stateless", "unsupported" or "unknown"), and POST /aggregate_metrics: the
// default computation (docs/reference/aggregate-metrics.md) plus the environment's
// `aggregate_hooks` (a duplicate (task, rollout) pair or another bad row is a 500 "ValueError:
// ...").
void add_resources_base_routes(http::Router& router, std::string reverify_mode = "unknown",
                               AggregateMetricsHooks aggregate_hooks = {});

// Schema of the /aggregate_metrics body: {"verify_responses": [<object>, ...]} (required).
std::shared_ptr<const http::Schema> aggregate_metrics_request_schema();

// Schema shared by every /verify: a run row plus the Response (both objects, required; the
// Response needs an `output` list of objects).
std::shared_ptr<const http::Schema> verify_request_schema();
// An environment's /verify schema: the two base fields, then `fields` in the order upstream's
// request model declares them (422 details come in that order).
std::shared_ptr<const http::Schema> verify_request_schema(std::vector<http::SchemaField> fields);

// POST /verify with `verifier` behind `schema`, timed for gym.verify.duration_ms and counted for
// gym.verify.success_rate (docs/design/telemetry-contract.md#metrics): every call that passed
// validation is one sample; it completed when the verifier returned a 2xx answer (any reward), it
// failed when it threw (a 500) or answered an error status.
void add_verify_route(ServerContext& ctx, http::Router& router, http::JsonHandler verifier,
                      std::shared_ptr<const http::Schema> schema);

// The part of a resources server that its environment writes: the /verify handler and the body
// schema it takes (verify_request_schema(...)).
struct VerifyRoute {
  http::JsonHandler verifier;
  std::shared_ptr<const http::Schema> schema;
};

// An environment: what register_environment needs to make it a resources server.
struct Environment {
  std::string name;        // implementation key in configs, e.g. "mcqa"
  std::string class_name;  // upstream class name: the session cookie prefix
  // Called once per serving instance, after the base routes: adds the environment's tool
  // routes (it may replace /seed_session) and returns its /verify.
  std::function<VerifyRoute(ServerContext&, http::Router&)> add_routes;
  std::string reverify_mode = "unknown";  // GET /reverify_mode
  AggregateMetricsHooks aggregate_hooks = {};
};

// Registers `environment` as a resources server: the base routes of add_resources_base_routes,
// then the environment's own routes, then its /verify through add_verify_route (timed and
// counted), so no environment can leave out a base route or the verify metrics.
void register_environment(Registry& registry, Environment environment);

// The start of every /verify answer (docs/design/conformance.md#verify-answers):
// `responses_create_params` and `response` as received, then `reward`; the environment appends its
// extra fields.
boost::json::object verify_response(const boost::json::object& request, double reward);

}  // namespace gym::servers
