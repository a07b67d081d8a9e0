#include "python_compat/errors.h"
#include "python_compat/json.h"
#include "python_compat/json_equal.h"
#include "python_compat/str.h"
#include "servers/resources_server.h"

#include <boost/json.hpp>

#include <cstdint>
#include <memory>
#include <string>

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

// pydantic's error when upstream builds its response model from invalid values.
class ValidationError : public python_compat::PyException {
 public:
  using python_compat::PyException::PyException;
};

// actual := json.loads(arguments)["synonym_values"] of the last extract_synonym_values call.
json::value reported_values(const json::array& output) {
  for (auto it = output.rbegin(); it != output.rend(); ++it) {
    const auto* item = it->if_object();
    if (!item) continue;
    const auto* type = item->if_contains("type");
    const auto* name = item->if_contains("name");
    if (!type || *type != "function_call" || !name || *name != "extract_synonym_values") continue;
    const auto* arguments = item->if_contains("arguments");
    if (!arguments || !arguments->is_string())
      throw python_compat::TypeError(
          "the JSON object must be str, bytes or bytearray, not " +
          (arguments ? py_type_name(*arguments) : std::string("NoneType")));
    json::value parsed = python_compat::py_json_loads(arguments->get_string());
    if (parsed.is_array())
      throw python_compat::TypeError("list indices must be integers or slices, not str");
    if (parsed.is_string())
      throw python_compat::TypeError("string indices must be integers, not 'str'");
    if (!parsed.is_object())
      throw python_compat::TypeError("'" + py_type_name(parsed) + "' object is not subscriptable");
    const auto* values = parsed.get_object().if_contains("synonym_values");
    if (!values) throw python_compat::KeyError(python_compat::py_repr("synonym_values"));
    return *values;
  }
  return json::array{};
}

// The elements of set(v): a list's elements, a str's characters, a dict's keys.
json::array set_elements(const json::value& v) {
  json::array elements;
  if (v.is_array()) {
    elements = v.get_array();
  } else if (v.is_string()) {
    std::string_view s = v.get_string();
    for (std::size_t i = 0; i < s.size();) {
      std::size_t start = i;
      do ++i;
      while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80);
      elements.emplace_back(s.substr(start, i - start));
    }
  } else if (v.is_object()) {
    for (const auto& kv : v.get_object()) elements.emplace_back(kv.key());
  } else {
    throw python_compat::TypeError("'" + py_type_name(v) + "' object is not iterable");
  }
  json::array distinct;
  for (const auto& e : elements) {
    if (!python_compat::py_hashable(e))
      throw python_compat::TypeError("unhashable type: '" + py_type_name(e) + "'");
    bool seen = false;
    for (const auto& d : distinct) seen = seen || json_equal(d, e, BoolRule::as_integers);
    if (!seen) distinct.push_back(e);
  }
  return distinct;
}

// `needle in haystack` for the containers set_elements accepts.
bool contains(const json::value& haystack, const json::value& needle) {
  if (haystack.is_array()) {
    for (const auto& e : haystack.get_array())
      if (json_equal(e, needle, BoolRule::as_integers)) return true;
    return false;
  }
  if (haystack.is_string()) {
    if (!needle.is_string())
      throw python_compat::TypeError("'in <string>' requires string as left operand, not " +
                                     py_type_name(needle));
    return std::string_view(haystack.get_string()).find(needle.get_string()) !=
           std::string_view::npos;
  }
  if (haystack.is_object())
    return needle.is_string() && haystack.get_object().contains(needle.get_string());
  throw python_compat::TypeError("argument of type '" + py_type_name(haystack) +
                                 "' is not iterable");
}

// parsed_synonym_values: List[int] validated the way upstream's response model validates it.
json::value validated_values(const json::value& actual) {
  static const Schema schema = Schema::list_of(Schema::of(Schema::Kind::integer));
  json::value copy = actual;
  auto errors = http::validate_body(schema, copy);
  if (errors.empty()) return copy;
  std::string message = std::to_string(errors.size()) + " validation error" +
                        (errors.size() == 1 ? "" : "s") + " for ExampleMultiStepVerifyResponse";
  for (const auto& e : errors) {
    std::string loc = "parsed_synonym_values";
    const auto& path = e.at("loc").get_array();
    for (std::size_t k = 1; k < path.size(); ++k)
      loc += "." + (path[k].is_string() ? std::string(path[k].get_string())
                                        : std::to_string(path[k].to_number<std::int64_t>()));
    message += "\n" + loc + "\n  " + std::string(e.at("msg").get_string()) +
               " [type=" + std::string(e.at("type").get_string()) +
               ", input_type=" + py_type_name(e.at("input")) + "]";
  }
  throw ValidationError(message);
}

json::object verify(const json::object& row) {
  const auto& expected = row.at("expected_synonym_values");
  json::value actual = reported_values(row.at("response").at("output").get_array());

  bool accuracy = json_equal(expected, actual, BoolRule::as_integers);
  json::array actual_set = set_elements(actual);
  json::array expected_set = set_elements(expected);
  std::size_t common = 0;
  for (const auto& a : actual_set) {
    for (const auto& e : expected_set) {
      if (json_equal(a, e, BoolRule::as_integers)) {
        ++common;
        break;
      }
    }
  }
  std::size_t expected_len = expected.get_array().size();
  if (expected_len == 0) throw python_compat::ZeroDivisionError("division by zero");
  double set_overlap = static_cast<double>(common) / static_cast<double>(expected_len);
  bool minefield_hit = contains(actual, row.at("minefield_label")) ||
                       contains(actual, row.at("minefield_label_value"));
  bool order_failure = !accuracy && set_overlap == 1.0;

  json::object out = servers::verify_response(row, accuracy ? 1.0 : 0.0);
  out["parsed_synonym_values"] = validated_values(actual);
  out["accuracy"] = accuracy;
  out["set_overlap"] = set_overlap;
  out["original_term_minefield_hit"] = minefield_hit;
  out["order_instruction_following_failure"] = order_failure;
  return out;
}

}  // namespace

// ExampleMultiStepResourcesServer (README.md here): look up synonym values, then report them with
// extract_synonym_values; verify compares the last reported list with the expected one.
// Registered by the generated builtin_environments.cpp (environments/CMakeLists.txt).
servers::Environment example_multi_step_environment() {
  return {
      "example_multi_step",
      "ExampleMultiStepResourcesServer",
      [](servers::ServerContext&, http::Router& router) -> servers::VerifyRoute {
        auto synonym = std::make_shared<const Schema>(
            Schema::object_of({{"synonym", Schema::of(Schema::Kind::string), true}}));
        router.post("/get_synonym_value",
                    http::json_route(
                        [](Request&, json::value& body) -> asio::awaitable<Response> {
                          std::int64_t sum = 0;
                          auto synonym = body.at("synonym").get_string();
                          for (char32_t c : python_compat::py_code_points(synonym))
                            sum += static_cast<std::int64_t>(c);
                          co_return Response::json(json::object{{"synonym_value", sum}});
                        },
                        synonym));
        auto values = std::make_shared<const Schema>(Schema::object_of(
            {{"synonym_values", Schema::list_of(Schema::of(Schema::Kind::integer)), true}}));
        router.post("/extract_synonym_values",
                    http::json_route(
                        [](Request&, json::value&) -> asio::awaitable<Response> {
                          co_return Response::json(json::object{{"success", true}});
                        },
                        values));
        auto verify_schema = servers::verify_request_schema({
            {"id", Schema::of(Schema::Kind::integer), true},
            {"expected_synonym_values", Schema::list_of(Schema::of(Schema::Kind::integer)), true},
            {"expected_synonyms", Schema::list_of(Schema::of(Schema::Kind::string)), true},
            {"minefield_label", Schema::of(Schema::Kind::string), true},
            {"minefield_label_value", Schema::of(Schema::Kind::integer), true},
        });
        return {[](Request&, json::value& body) -> asio::awaitable<Response> {
                  co_return Response::json(verify(body.get_object()));
                },
                verify_schema};
      },
  };
}

}  // namespace gym::environments
