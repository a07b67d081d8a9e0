#pragma once
// The routes every resources server has (runtime.md 4.5); environments add their tools and
// their /verify on top.
#include "http/router.h"
#include "servers/aggregate_metrics.h"
#include "servers/registry.h"

#include <boost/json/object.hpp>

#include <memory>
#include <string>
#include <vector>

namespace gym::servers {

// GET / liveness, POST /seed_session answering {}, GET /reverify_mode answering
// `reverify_mode` ("stateless", "unsupported" or "unknown"), and POST /aggregate_metrics: the
// default computation of runtime.md 7.9 plus the environment's `aggregate_hooks` (a duplicate
// (task, rollout) pair or another bad row is a 500 "ValueError: ...").
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
// gym.verify.success_rate (telemetry.md 6.3, 6.4): every call that passed validation is one
// sample; it completed when the verifier returned a 2xx answer (any reward), it failed when it
// threw (a 500) or answered an error status.
void add_verify_route(ServerContext& ctx, http::Router& router, http::JsonHandler verifier,
                      std::shared_ptr<const http::Schema> schema);

// The start of every /verify answer (environments.md 1.2): `responses_create_params` and
// `response` as received, then `reward`; the environment appends its extra fields.
boost::json::object verify_response(const boost::json::object& request, double reward);

}  // namespace gym::servers
