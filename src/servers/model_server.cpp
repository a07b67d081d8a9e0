#include "servers/model_server.h"

#include "servers/handler_span.h"

#include "servers/responses_api.h"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <string_view>

namespace gym::servers {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;
using http::Schema;

namespace {

// The members of upstream's NeMoGymResponseInputItem union, in declaration order; pydantic
// names the list branch of `input: Union[str, List[NeMoGymResponseInputItem]]` after them.
constexpr std::array<std::string_view, 14> kInputItemClasses{
    "NeMoGymEasyInputMessage",
    "NeMoGymMessage",
    "NeMoGymResponseOutputMessage",
    "NeMoGymResponseFunctionToolCall",
    "NeMoGymFunctionCallOutput",
    "NeMoGymResponseReasoningItem",
    "NeMoGymResponseMcpCall",
    "NeMoGymResponseMcpListTools",
    "NeMoGymResponseMcpApprovalRequest",
    "NeMoGymEasyInputMessageForTraining",
    "NeMoGymMessageForTraining",
    "NeMoGymResponseOutputMessageForTraining",
    "NeMoGymResponseFunctionToolCallForTraining",
    "NeMoGymResponseReasoningItemForTraining",
};

const std::string& input_list_label() {
  static const std::string label = [] {
    std::string s = "list[union[";
    for (std::size_t i = 0; i < kInputItemClasses.size(); ++i) {
      if (i > 0) s += ',';
      s += kInputItemClasses[i];
    }
    return s + "]]";
  }();
  return label;
}

// create_params_schema() with `input` and `stream` left to the checks below (the generic
// schema cannot express a union or a boolean literal).
const Schema& model_schema() {
  static const Schema schema = [] {
    Schema s = *create_params_schema();
    for (auto& f : s.fields)
      if (f.name == "stream") f.schema = Schema::of(Schema::Kind::any);
    return s;
  }();
  return schema;
}

json::object error_entry(std::string_view type, json::array loc, std::string_view msg,
                         const json::value& input) {
  json::object e;
  e["type"] = type;
  e["loc"] = std::move(loc);
  e["msg"] = msg;
  e["input"] = input;
  return e;
}

// `input: Union[str, List[item]]`: pydantic reports every failed union branch.
void check_input(const json::value& input, json::array& errors) {
  if (input.is_string()) return;
  if (const auto* items = input.if_array()) {
    json::array item_errors;
    for (std::size_t i = 0; i < items->size(); ++i) {
      if ((*items)[i].is_object()) continue;
      for (auto cls : kInputItemClasses) {
        auto e = error_entry(
            "model_type",
            json::array{"body", "input", json::string(input_list_label()),
                        static_cast<std::int64_t>(i), json::string(cls)},
            "Input should be a valid dictionary or instance of " + std::string(cls), (*items)[i]);
        json::object ctx;
        ctx["class_name"] = cls;
        e["ctx"] = std::move(ctx);
        item_errors.push_back(std::move(e));
      }
    }
    if (item_errors.empty()) return;
    errors.push_back(error_entry("string_type", json::array{"body", "input", "str"},
                                 "Input should be a valid string", input));
    for (auto& e : item_errors) errors.push_back(std::move(e));
    return;
  }
  errors.push_back(error_entry("string_type", json::array{"body", "input", "str"},
                               "Input should be a valid string", input));
  errors.push_back(error_entry("list_type",
                               json::array{"body", "input", json::string(input_list_label())},
                               "Input should be a valid list", input));
}

// `stream: Optional[Literal[False]]`: streaming is not supported (a 422, as upstream's model).
void check_stream(const json::value& stream, json::array& errors) {
  if (stream.is_null() || (stream.is_bool() && !stream.get_bool())) return;
  auto e =
      error_entry("literal_error", json::array{"body", "stream"}, "Input should be False", stream);
  json::object ctx;
  ctx["expected"] = "False";
  e["ctx"] = std::move(ctx);
  errors.push_back(std::move(e));
}

// Position of the field an error is about: declared fields in order, unknown keys last.
std::size_t field_rank(const json::value& error) {
  const auto& fields = model_schema().fields;
  const auto* loc = error.get_object().at("loc").if_array();
  if (!loc || loc->size() < 2 || !(*loc)[1].is_string()) return 0;
  const auto& type = error.get_object().at("type");
  if (type.is_string() && type.get_string() == "extra_forbidden") return fields.size();
  auto name = (*loc)[1].get_string();
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (fields[i].name == name) return i;
  return fields.size();
}

}  // namespace

json::array validate_model_create_params(json::value& body) {
  json::array errors = http::validate_body(model_schema(), body);
  const auto* params = body.if_object();
  if (!params) return errors;
  if (const auto* input = params->if_contains("input")) check_input(*input, errors);
  if (const auto* stream = params->if_contains("stream")) check_stream(*stream, errors);
  std::stable_sort(errors.begin(), errors.end(), [](const json::value& a, const json::value& b) {
    return field_rank(a) < field_rank(b);
  });
  return errors;
}

void add_model_server_routes(const ServerContext& ctx, http::Router& router,
                             ModelServerHandlers handlers) {
  router.get("/", [](Request&) -> asio::awaitable<Response> {
    co_return Response::json(json::object{{"status", "ok"}});
  });
  router.post(
      "/v1/responses",
      http::json_route([&ctx, answer = std::move(handlers.responses)](
                           Request& req, json::value& body) -> asio::awaitable<Response> {
        HandlerSpan span(ctx, telemetry::SpanGroup::model_call, "gym.model.responses", req);
        if (req.body.empty()) {
          json::array missing;
          missing.push_back(error_entry("missing", json::array{"body"}, "Field required", nullptr));
          co_return Response::detail(422, missing);
        }
        auto errors = validate_model_create_params(body);
        if (!errors.empty()) co_return Response::detail(422, errors);
        co_return co_await answer_in(span, answer, req, body.get_object());
      }));
  if (handlers.chat_completions)
    router.post("/v1/chat/completions",
                http::json_route(
                    [&ctx, answer = std::move(handlers.chat_completions)](
                        Request& req, json::value& body) -> asio::awaitable<Response> {
                      HandlerSpan span(ctx, telemetry::SpanGroup::model_call,
                                       "gym.model.chat_completions", req);
                      co_return co_await answer_in(span, answer, req, body);
                    },
                    std::move(handlers.chat_completions_schema)));
}

}  // namespace gym::servers
