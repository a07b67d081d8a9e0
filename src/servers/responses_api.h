#pragma once
// Shapes of the OpenAI Responses API as NeMo Gym uses them
// (docs/design/wire-compatibility.md#responses-api-shapes): create-params defaults and validation,
// Response checks, usage accumulation.
#include "http/schema.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <memory>
#include <optional>
#include <string>

namespace gym::servers {

// Every create-params field in upstream order, filled from `params` where present and with the
// upstream default otherwise. Unknown keys of `params` are dropped.
boost::json::object expand_create_params(const boost::json::object& params);

// Strict schema of POST /v1/responses on model servers: unknown keys are `extra_forbidden`.
std::shared_ptr<const http::Schema> create_params_schema();

// Why `v` is not a usable Response (missing required fields, `output` not a list of items
// with `type`), or nullopt when it is one.
std::optional<std::string> response_problem(const boost::json::value& v);

// The text of the assistant's messages in a Response's `output`, as verifiers read it: every
// item with type `message` and role `assistant` contributes its string `content`, or the `text`
// of each content part that has one, in order, joined with "\n"
// (docs/design/conformance.md#text-views-of-a-response).
std::string assistant_text(const boost::json::array& output);

// usage := accumulate(usage, response.usage): the token counts summed over the turns (a count
// missing on either side is null).
boost::json::value accumulate_usage(const boost::json::value& total, const boost::json::value& add);

}  // namespace gym::servers
