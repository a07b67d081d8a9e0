#pragma once
// The routes every model server has (docs/design/wire-compatibility.md#responses-api-shapes): GET /
// liveness, POST /v1/responses with the strict create-params validation, and POST
// /v1/chat/completions for implementations that provide it. Implementations supply the answers;
// everything else is 404 like any unknown route.
#include "http/router.h"
#include "servers/registry.h"

#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <functional>
#include <memory>

namespace gym::servers {

// Validates a POST /v1/responses body strictly, as upstream's
// NeMoGymResponseCreateParamsNonStreaming does: the lax coercions of http/schema.h (applied to
// `body` in place), `input` a string or a list of items, `stream` only null or false, unknown keys
// `extra_forbidden`. Returns the 422 detail entries in upstream order (declared fields in order,
// then unknown keys); empty when the body is valid.
boost::json::array validate_model_create_params(boost::json::value& body);

// Answers a validated POST /v1/responses. `params` holds the create params as received (only
// the fields present, lax values coerced). May await; an exception becomes a 500.
using ResponsesAnswer =
    std::function<boost::asio::awaitable<http::Response>(http::Request&, boost::json::object&)>;

struct ModelServerHandlers {
  ResponsesAnswer responses;  // required
  // POST /v1/chat/completions; when empty the route does not exist (404).
  http::JsonHandler chat_completions;
  std::shared_ptr<const http::Schema> chat_completions_schema;  // optional, for json_route
};

// Adds GET /, POST /v1/responses and, when provided, POST /v1/chat/completions, each answer in
// its gym.model.* span (span group `model_call`).
void add_model_server_routes(const ServerContext& ctx, http::Router& router,
                             ModelServerHandlers handlers);

}  // namespace gym::servers
