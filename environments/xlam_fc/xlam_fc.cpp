#include "python_compat/errors.h"
#include "python_compat/json.h"
#include "python_compat/json_equal.h"
#include "servers/resources_server.h"

#include <boost/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gym::environments {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;
using http::Schema;
using python_compat::BoolRule;
using python_compat::json_equal;
using python_compat::py_type_name;

namespace {

// _normalize_arguments: a JSON text is parsed ({} when it does not parse), an object is kept,
// anything else is {}.
json::value normalize_arguments(const json::value& arguments) {
  if (arguments.is_string()) {
    try {
      return python_compat::py_json_loads(arguments.get_string());
    } catch (const python_compat::JSONDecodeError&) {
      return json::object{};
    }
  }
  if (arguments.is_object()) return arguments;
  return json::object{};
}

const json::value* get(const json::object& o, std::string_view key) { return o.if_contains(key); }

// `key in args` then `args[key]`, as Python evaluates them on whatever json.loads produced.
const json::value* lookup(const json::value& args, const std::string& key) {
  if (args.is_object()) return args.get_object().if_contains(key);
  if (args.is_array()) {
    for (const auto& e : args.get_array())
      if (e.is_string() && e.get_string() == key)
        throw python_compat::TypeError("list indices must be integers or slices, not str");
    return nullptr;
  }
  if (args.is_string()) {
    if (std::string_view(args.get_string()).find(key) != std::string_view::npos)
      throw python_compat::TypeError("string indices must be integers, not 'str'");
    return nullptr;
  }
  throw python_compat::TypeError("argument of type '" + py_type_name(args) + "' is not iterable");
}

bool calls_match(const json::object& predicted, const json::object& expected) {
  static const json::value null_value;
  const auto* predicted_name = get(predicted, "name");
  const auto* expected_name = get(expected, "name");
  if (!json_equal(predicted_name ? *predicted_name : null_value,
                  expected_name ? *expected_name : null_value, BoolRule::as_integers))
    return false;
  json::value predicted_args = normalize_arguments(predicted.at("arguments"));
  const auto* raw_expected = get(expected, "arguments");
  json::value expected_args = raw_expected ? normalize_arguments(*raw_expected) : json::object{};
  if (!expected_args.is_object())
    throw python_compat::AttributeError("'" + py_type_name(expected_args) +
                                        "' object has no attribute 'items'");
  for (const auto& kv : expected_args.get_object()) {
    const auto* value = lookup(predicted_args, std::string(kv.key()));
    if (!value || !json_equal(*value, kv.value(), BoolRule::as_integers)) return false;
  }
  return true;
}

json::object verify(const json::object& row) {
  json::array predicted;
  for (const auto& v : row.at("response").at("output").get_array()) {
    const auto* item = v.if_object();
    if (!item || !item->contains("type") || item->at("type") != "function_call") continue;
    const auto* name = get(*item, "name");
    const auto* arguments = get(*item, "arguments");
    json::object call;
    call["name"] = name ? *name : json::value(nullptr);
    call["arguments"] = normalize_arguments(arguments ? *arguments : json::value(nullptr));
    predicted.push_back(std::move(call));
  }
  static const json::array no_answers;
  const auto* answers_value = get(row, "expected_answers");
  const json::array& expected = answers_value ? answers_value->get_array() : no_answers;

  double reward = 0.0;
  std::size_t correct = 0;
  if (expected.empty()) {
    reward = predicted.empty() ? 1.0 : 0.0;
  } else {
    std::vector<bool> used(predicted.size(), false);
    for (const auto& e : expected) {
      for (std::size_t i = 0; i < predicted.size(); ++i) {
        if (used[i] || !calls_match(predicted[i].get_object(), e.get_object())) continue;
        used[i] = true;
        ++correct;
        break;
      }
    }
    reward = correct == expected.size() && expected.size() == predicted.size() ? 1.0 : 0.0;
  }

  json::object out = servers::verify_response(row, reward);
  out["num_expected"] = static_cast<std::int64_t>(expected.size());
  out["num_predicted"] = static_cast<std::int64_t>(predicted.size());
  out["num_correct"] = static_cast<std::int64_t>(correct);
  out["predicted_calls"] = std::move(predicted);
  return out;
}

}  // namespace

// XlamFcResourcesServer (README.md here): function-calling accuracy. No tool routes (every call
// gets 404); verify matches the response's function calls against `expected_answers`.
// Registered by the generated builtin_environments.cpp (environments/CMakeLists.txt).
servers::Environment xlam_fc_environment() {
  return {
      "xlam_fc",
      "XlamFcResourcesServer",
      [](servers::ServerContext&, http::Router&) -> servers::VerifyRoute {
        auto verify_schema = servers::verify_request_schema(
            {{"expected_answers", Schema::list_of(Schema::of(Schema::Kind::dict)), false}});
        return {[](Request&, json::value& body) -> asio::awaitable<Response> {
                  co_return Response::json(verify(body.get_object()));
                },
                verify_schema};
      },
  };
}

}  // namespace gym::environments
