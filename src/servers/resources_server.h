#pragma once
// The routes every resources server has (runtime.md 4.5); environments add their tools and
// their /verify on top.
#include "http/router.h"
#include "servers/aggregate_metrics.h"

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

// The start of every /verify answer (environments.md 1.2): `responses_create_params` and
// `response` as received, then `reward`; the environment appends its extra fields.
boost::json::object verify_response(const boost::json::object& request, double reward);

}  // namespace gym::servers
