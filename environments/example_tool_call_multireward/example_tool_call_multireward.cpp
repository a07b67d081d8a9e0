#include "python_compat/errors.h"
#include "python_compat/json.h"
#include "python_compat/json_equal.h"
#include "python_compat/utf8.h"
#include "servers/resources_server.h"

#include <boost/json.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gym::environments {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;
using http::Schema;
using python_compat::json_equal;
using python_compat::py_json_loads;
using python_compat::py_truthy;
using python_compat::py_type_name;

namespace {

constexpr auto kPython = python_compat::BoolRule::as_integers;

const json::value& member_or_null(const json::object& o, std::string_view key) {
  static const json::value null_value;
  const auto* v = o.if_contains(key);
  return v ? *v : null_value;
}

// _parse_arguments: (the arguments as an object, whether they are one). A string is parsed as
// JSON: text that does not parse, or parses to anything but an object, gives ({}, false).
std::pair<json::object, bool> parse_arguments(const json::value& arguments) {
  if (arguments.is_object()) return {arguments.get_object(), true};
  if (!arguments.is_string()) return {{}, false};
  json::value parsed;
  try {
    parsed = py_json_loads(arguments.get_string());
  } catch (const python_compat::JSONDecodeError&) {
    return {{}, false};
  }
  if (!parsed.is_object()) return {{}, false};
  return {std::move(parsed.get_object()), true};
}

struct Call {
  json::value name;
  json::value arguments;
};

// dict.get(key) of the object `o` for the JSON value `key` (object keys are strings, so any
// other hashable key is absent); TypeError for a list or dict key, as Python's `in` raises.
const json::value* lookup(const json::object& o, const json::value& key) {
  if (!python_compat::py_hashable(key))
    throw python_compat::TypeError("unhashable type: '" + py_type_name(key) + "'");
  return key.is_string() ? o.if_contains(key.get_string()) : nullptr;
}

// The elements `for k in value` walks: a list's items, a string's characters, a dict's keys.
std::vector<json::value> iterate(const json::value& value) {
  std::vector<json::value> out;
  if (value.is_array()) {
    for (const auto& e : value.get_array()) out.push_back(e);
  } else if (value.is_string()) {
    std::string_view s = value.get_string();
    for (std::size_t i = 0; i < s.size();) {
      std::size_t start = i;
      python_compat::next_code_point(s, i);
      out.emplace_back(s.substr(start, i - start));
    }
  } else if (value.is_object()) {
    for (const auto& kv : value.get_object()) out.emplace_back(kv.key());
  } else {
    throw python_compat::TypeError("'" + py_type_name(value) + "' object is not iterable");
  }
  return out;
}

// _required_params: `parameters.required` of the first tool named `name` (falsy: none).
json::value required_params(const json::object& row, const json::value& name) {
  const json::value& params = member_or_null(row, "responses_create_params");
  const json::value* tools =
      params.is_object() ? params.get_object().if_contains("tools") : nullptr;
  if (!tools || !tools->is_array()) return json::array{};
  for (const auto& tool : tools->get_array()) {
    if (!tool.is_object()) continue;
    if (!json_equal(member_or_null(tool.get_object(), "name"), name, kPython)) continue;
    const json::value* parameters = tool.get_object().if_contains("parameters");
    if (!parameters) return json::array{};
    if (!parameters->is_object())
      throw python_compat::AttributeError("'" + py_type_name(*parameters) +
                                          "' object has no attribute 'get'");
    const json::value& required = member_or_null(parameters->get_object(), "required");
    return py_truthy(required) ? required : json::array{};
  }
  return json::array{};
}

// _call_matches: a non-empty expected call with the same name whose every expected argument
// equals the predicted one (Python ==; a missing predicted argument reads as null).
bool call_matches(const Call& predicted, const json::object& expected) {
  if (expected.empty()) return false;
  if (!json_equal(predicted.name, member_or_null(expected, "name"), kPython)) return false;
  json::object predicted_args = parse_arguments(predicted.arguments).first;
  const json::value* expected_args = expected.if_contains("arguments");
  if (!expected_args || !py_truthy(*expected_args)) return true;
  if (!expected_args->is_object())
    throw python_compat::AttributeError("'" + py_type_name(*expected_args) +
                                        "' object has no attribute 'items'");
  static const json::value null_value;
  for (const auto& kv : expected_args->get_object()) {
    const json::value* got = predicted_args.if_contains(kv.key());
    if (!json_equal(got ? *got : null_value, kv.value(), kPython)) return false;
  }
  return true;
}

json::object verify(const json::object& row) {
  std::vector<Call> calls;
  bool has_message = false;
  for (const auto& item : row.at("response").at("output").get_array()) {
    const json::object& o = item.get_object();
    const json::value& type = member_or_null(o, "type");
    if (type == "function_call")
      calls.push_back({member_or_null(o, "name"), member_or_null(o, "arguments")});
    if (type == "message") has_message = true;
  }

  // format: exactly one call and no message item (of any role).
  double format = calls.size() == 1 && !has_message ? 1.0 : 0.0;

  // schema_valid: the first call's arguments are an object holding every required parameter.
  double schema_valid = 0.0;
  if (!calls.empty()) {
    auto [parsed, valid] = parse_arguments(calls.front().arguments);
    json::value required = required_params(row, calls.front().name);
    bool complete = valid;
    if (valid)
      for (const auto& key : iterate(required))
        if (!lookup(parsed, key)) {
          complete = false;
          break;
        }
    schema_valid = complete ? 1.0 : 0.0;
  }

  // correctness: some call matches the expected one.
  const json::object& expected = row.at("expected_call").get_object();
  double correctness = 0.0;
  for (const auto& call : calls)
    if (call_matches(call, expected)) {
      correctness = 1.0;
      break;
    }

  json::array predicted;
  for (const auto& call : calls)
    predicted.push_back(
        json::object{{"name", call.name}, {"arguments", parse_arguments(call.arguments).first}});

  json::object out = servers::verify_response(row, correctness + schema_valid + format);
  out["reward_components"] = json::object{
      {"correctness", correctness}, {"schema_valid", schema_valid}, {"format", format}};
  out["correctness"] = correctness;
  out["schema_valid"] = schema_valid;
  out["format"] = format;
  out["predicted_calls"] = std::move(predicted);
  return out;
}

}  // namespace

// ToolCallMultiRewardResourcesServer: one get_weather tool ("sunny" everywhere) and a verifier
// that scores three {0, 1} components — correctness, schema_valid, format — and rewards their
// sum (0.0 to 3.0).
// Registered by the generated builtin_environments.cpp (environments/CMakeLists.txt).
servers::Environment example_tool_call_multireward_environment() {
  return {
      "example_tool_call_multireward",
      "ToolCallMultiRewardResourcesServer",
      [](servers::ServerContext&, http::Router& router) -> servers::VerifyRoute {
        auto weather = std::make_shared<const Schema>(
            Schema::object_of({{"city", Schema::of(Schema::Kind::string), true}}));
        router.post("/get_weather",
                    http::json_route(
                        [](Request&, json::value& body) -> asio::awaitable<Response> {
                          std::string city(body.at("city").get_string());
                          co_return Response::json(json::object{
                              {"city", city},
                              {"weather_description", "The weather in " + city + " is sunny."}});
                        },
                        weather));
        return {[](Request&, json::value& body) -> asio::awaitable<Response> {
                  json::object& row = body.get_object();
                  if (!row.contains("expected_call")) row["expected_call"] = json::object{};
                  co_return Response::json(verify(row));
                },
                servers::verify_request_schema(
                    {{"expected_call", Schema::of(Schema::Kind::dict), false}})};
      },
  };
}

}  // namespace gym::environments
