#include "core/json_text.h"
#include "python_compat/errors.h"
#include "python_compat/json.h"
#include "python_compat/json_equal.h"
#include "python_compat/str.h"
#include "python_compat/utf8.h"
#include "servers/resources_server.h"

#include <boost/json.hpp>

#include <array>
#include <cerrno>
#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace gym::environments {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;
using http::Schema;
using python_compat::py_type_name;

namespace {

// ---- the calculators -------------------------------------------------------------------------
// MultiVerseMathHardResourcesServer's tools compute in an "alternate universe": each one is
// deliberately off (multiply is 1.1*a*b, sin is cos, pi is e, ...). They run on Python floats,
// so the special cases of CPython's float arithmetic and `math` module are reproduced here.

// The body fields, in the order the request model declares them (also the order in which Python
// meets the keyword arguments, which decides which unexpected one it reports).
constexpr std::array<std::string_view, 4> kArgNames{"a", "b", "radians", "base"};

// The keyword arguments that were set and not null (model_dump(exclude_unset) minus None).
struct Args {
  std::array<std::optional<double>, 4> values;
  double operator[](std::string_view name) const {
    for (std::size_t i = 0; i < kArgNames.size(); ++i)
      if (kArgNames[i] == name) return *values[i];
    return 0.0;
  }
};

struct Complex {
  double real;
  double imag;
};
// A tool's result: a float, or the complex number a negative base raised to a fractional power
// becomes (which the response model then rejects).
using Result = std::variant<double, Complex>;

// CPython's float_div: any zero divisor raises, even for 0.0 / 0.0.
double py_div(double x, double y) {
  if (y == 0.0) throw python_compat::ZeroDivisionError("float division by zero");
  return x / y;
}

bool is_odd_integer(double x) { return std::fmod(std::fabs(x), 2.0) == 1.0; }

// complex ** complex for a non-zero base and a non-integral real exponent (CPython's _Py_c_pow
// and complex_pow's range check).
Complex complex_pow(double base, double exponent) {
  errno = 0;
  double magnitude = std::pow(std::hypot(base, 0.0), exponent);
  double phase = std::atan2(0.0, base) * exponent;
  Complex r{magnitude * std::cos(phase), magnitude * std::sin(phase)};
  if (std::isinf(r.real) || std::isinf(r.imag))
    throw python_compat::OverflowError("complex exponentiation");
  return r;
}

// CPython's float_pow: x ** y for two floats.
Result py_pow(double x, double y) {
  if (y == 0.0) return 1.0;
  if (std::isnan(x)) return x;
  if (std::isnan(y)) return x == 1.0 ? 1.0 : y;
  if (std::isinf(y)) {
    double ax = std::fabs(x);
    if (ax == 1.0) return 1.0;
    if ((y > 0.0) == (ax > 1.0)) return std::fabs(y);
    return 0.0;
  }
  if (std::isinf(x)) {
    bool odd = is_odd_integer(y);
    if (y > 0.0) return odd ? x : std::fabs(x);
    return odd ? std::copysign(0.0, x) : 0.0;
  }
  if (x == 0.0) {
    if (y < 0.0) throw python_compat::ZeroDivisionError("0.0 cannot be raised to a negative power");
    return is_odd_integer(y) ? x : 0.0;
  }
  bool negate = false;
  if (x < 0.0) {
    if (y != std::floor(y)) return complex_pow(x, y);
    x = -x;
    negate = is_odd_integer(y);
  }
  if (x == 1.0) return negate ? -1.0 : 1.0;
  errno = 0;
  double r = std::pow(x, y);
  if (std::isinf(r)) throw python_compat::OverflowError("(34, 'Numerical result out of range')");
  return negate ? -r : r;
}

// math_1's checks: a NaN from a non-NaN input, or an infinity from a finite one, is a domain
// error (none of sin, cos and log can overflow).
double math_1(double x, double r) {
  if ((std::isnan(r) && !std::isnan(x)) || (std::isinf(r) && std::isfinite(x)))
    throw python_compat::ValueError("math domain error");
  return r;
}

// math.log(x) of a float (m_log).
double py_log(double x) {
  double r;
  if (std::isfinite(x))
    r = x > 0.0 ? std::log(x) : x == 0.0 ? -HUGE_VAL : std::nan("");
  else
    r = std::isnan(x) || x > 0.0 ? x : std::nan("");
  return math_1(x, r);
}

struct Tool {
  std::string_view name;
  std::vector<std::string_view> params;
  Result (*compute)(const Args&);
};

const std::vector<Tool>& tools() {
  static const std::vector<Tool> table{
      {"add", {"a", "b"}, [](const Args& x) -> Result { return x["a"] + x["b"] + 1.2; }},
      {"subtract", {"a", "b"}, [](const Args& x) -> Result { return x["a"] - x["b"] - 3.0; }},
      {"multiply", {"a", "b"}, [](const Args& x) -> Result { return 1.1 * x["a"] * x["b"]; }},
      {"divide", {"a", "b"}, [](const Args& x) -> Result { return py_div(0.5 * x["a"], x["b"]); }},
      {"sin",
       {"radians"},
       [](const Args& x) -> Result { return math_1(x["radians"], std::cos(x["radians"])); }},
      {"cos",
       {"radians"},
       [](const Args& x) -> Result { return math_1(x["radians"], std::sin(x["radians"])); }},
      {"power", {"a", "b"}, [](const Args& x) -> Result { return py_pow(x["a"], x["b"] + 2.0); }},
      {"log",
       {"a", "base"},
       [](const Args& x) -> Result {
         double numerator = py_log(x["a"]);
         return py_div(numerator, py_log(std::fabs(x["base"] + 1.5)));
       }},
      {"pi", {}, [](const Args&) -> Result { return std::numbers::e; }},
      {"negate", {"a"}, [](const Args& x) -> Result { return x["a"]; }},
      {"return_constant", {"a"}, [](const Args& x) -> Result { return x["a"]; }},
  };
  return table;
}

const Tool* find_tool(std::string_view name) {
  for (const auto& t : tools())
    if (t.name == name) return &t;
  return nullptr;
}

// Python's TypeError for keyword arguments that do not fit the signature: the first unexpected
// one in call order, else the missing parameters.
void check_call(const Tool& tool, const Args& args) {
  std::string fn = std::string(tool.name) + "()";
  for (std::size_t i = 0; i < kArgNames.size(); ++i) {
    if (!args.values[i]) continue;
    bool known = false;
    for (auto p : tool.params) known = known || p == kArgNames[i];
    if (!known)
      throw python_compat::TypeError(fn + " got an unexpected keyword argument '" +
                                     std::string(kArgNames[i]) + "'");
  }
  std::vector<std::string> missing;
  for (auto p : tool.params) {
    bool given = false;
    for (std::size_t i = 0; i < kArgNames.size(); ++i)
      given = given || (kArgNames[i] == p && args.values[i]);
    if (!given) missing.push_back("'" + std::string(p) + "'");
  }
  if (missing.empty()) return;
  std::string list = missing[0];
  if (missing.size() == 2) list += " and " + missing[1];
  throw python_compat::TypeError(fn + " missing " + std::to_string(missing.size()) +
                                 " required positional argument" +
                                 (missing.size() == 1 ? "" : "s") + ": " + list);
}

// repr() of a float inside a complex repr: like repr(float), without the added ".0".
std::string complex_part(double d, bool sign) {
  std::string s = core::python_float_repr(d);
  if (s.size() > 2 && s.ends_with(".0") && s.find('e') == std::string::npos) s.resize(s.size() - 2);
  if (sign && s[0] != '-') s.insert(s.begin(), '+');
  return s;
}

std::string complex_repr(const Complex& c) {
  if (c.real == 0.0 && !std::signbit(c.real)) return complex_part(c.imag, false) + "j";
  return "(" + complex_part(c.real, false) + complex_part(c.imag, true) + "j)";
}

// pydantic's ValidationError text for MultiVerseMathHardResponse(solution=<complex>).
std::string complex_solution_error(const Complex& c) {
  std::string value = complex_repr(c);
  if (value.size() > 50) value = value.substr(0, 25) + "..." + value.substr(value.size() - 24);
  return "1 validation error for MultiVerseMathHardResponse\nsolution\n"
         "  Input should be a valid number [type=float_type, input_value=" +
         value +
         ", input_type=complex]\n"
         "    For further information visit https://errors.pydantic.dev/2.13/v/float_type";
}

// POST /{path}: the calculator named by the path, or 404 "Function not found". A Python error
// inside the tool (or building its response) is a 500 whose detail is the error's text.
Response call_tool(std::string_view path, const json::object& body) {
  const Tool* tool = find_tool(path.substr(1));
  if (!tool) return Response::detail(404, json::string("Function not found"));
  Args args;
  for (std::size_t i = 0; i < kArgNames.size(); ++i) {
    const auto* v = body.if_contains(kArgNames[i]);
    if (v && !v->is_null()) args.values[i] = python_compat::py_float_of(*v);
  }
  try {
    check_call(*tool, args);
    Result r = tool->compute(args);
    if (const auto* c = std::get_if<Complex>(&r))
      return Response::detail(500, json::string(complex_solution_error(*c)));
    // Non-finite solutions are written as null, as pydantic serialises them.
    return Response::json(json::object{{"solution", std::get<double>(r)}});
  } catch (const python_compat::PyException& e) {
    return Response::detail(500, json::string(e.what()));
  }
}

// ---- verify ------------------------------------------------------------------------------------

// One entry of upstream's predicted list: a float, or None. json.loads returns one shared NaN
// object for every NaN literal and float() of a float is that float, so a NaN solution written
// as NaN is the very object a NaN ground truth is: `in` finds it by identity. A NaN from
// float("nan") is a new object and equals nothing.
struct Solution {
  double value = 0.0;
  bool json_nan = false;
};

// float(json.loads(output)["solution"]) of a function_call_output, or None where that raises.
std::optional<Solution> reported_solution(const json::object& item) {
  const auto* output = item.if_contains("output");
  if (!output || !output->is_string()) return std::nullopt;
  json::value parsed;
  try {
    parsed = python_compat::py_json_loads(output->get_string());
  } catch (const python_compat::PyException&) {
    return std::nullopt;
  }
  const auto* solution = parsed.is_object() ? parsed.get_object().if_contains("solution") : nullptr;
  if (!solution) return std::nullopt;
  if (python_compat::py_is_number(*solution)) {
    double v = python_compat::py_float_of(*solution);
    return Solution{v, std::isnan(v)};
  }
  if (solution->is_string()) {
    if (auto v = python_compat::py_float(solution->get_string())) return Solution{*v, false};
  }
  return std::nullopt;
}

// The elements a Python `for` loop visits: a list's items, a dict's keys, a str's characters.
json::array iterated(const json::value& v) {
  if (v.is_array()) return v.get_array();
  json::array out;
  if (v.is_object()) {
    for (const auto& kv : v.get_object()) out.emplace_back(kv.key());
  } else if (v.is_string()) {
    std::string_view s = v.get_string();
    for (std::size_t i = 0; i < s.size();) {
      std::string one;
      python_compat::append_utf8(one, python_compat::next_code_point(s, i));
      out.emplace_back(one);
    }
  } else {
    throw python_compat::TypeError("'" + py_type_name(v) + "' object is not iterable");
  }
  return out;
}

// `gt in predicted` (identity, then ==): None is in the list when a tool output failed; numbers
// compare by value; a NaN ground truth is the same object as a NaN solution parsed from JSON.
bool reported(const json::value& gt, const std::vector<std::optional<Solution>>& predicted) {
  bool gt_nan = gt.is_double() && std::isnan(gt.get_double());
  for (const auto& p : predicted) {
    if (!p) {
      if (gt.is_null()) return true;
    } else if (gt_nan ? p->json_nan
                      : python_compat::json_equal(gt, json::value(p->value),
                                                  python_compat::BoolRule::as_integers)) {
      return true;
    }
  }
  return false;
}

json::object verify(const json::object& row) {
  const auto& ground_truth_text = row.at("ground_truth");
  if (!ground_truth_text.is_string())
    throw python_compat::TypeError("the JSON object must be str, bytes or bytearray, not " +
                                   py_type_name(ground_truth_text));
  json::value ground_truth = python_compat::py_json_loads(ground_truth_text.get_string());

  std::vector<std::optional<Solution>> predicted;
  for (const auto& v : row.at("response").at("output").get_array()) {
    const auto* item = v.if_object();
    const auto* type = item ? item->if_contains("type") : nullptr;
    if (type && *type == "function_call_output") predicted.push_back(reported_solution(*item));
  }

  double reward = 1.0;
  for (const auto& gt : iterated(ground_truth)) {
    if (!reported(gt, predicted)) {
      reward = 0.0;
      break;
    }
  }
  return servers::verify_response(row, reward);
}

// `ground_truth: list[float] | str`, validated as pydantic's smart union does: one error per
// member when neither accepts the value. Empty when valid.
json::array ground_truth_errors(const json::value& value) {
  if (value.is_string()) return {};
  json::array errors;
  json::value list = value;
  auto list_errors = http::validate_body(Schema::list_of(Schema::of(Schema::Kind::number)), list);
  if (list_errors.empty()) return {};
  for (auto& e : list_errors) {
    auto& loc = e.as_object()["loc"].as_array();
    json::array full{"body", "ground_truth", "list[float]"};
    for (std::size_t k = 1; k < loc.size(); ++k) full.push_back(loc[k]);
    loc = std::move(full);
    errors.push_back(std::move(e));
  }
  json::object str_error{{"type", "string_type"},
                         {"loc", json::array{"body", "ground_truth", "str"}},
                         {"msg", "Input should be a valid string"},
                         {"input", value}};
  errors.push_back(std::move(str_error));
  return errors;
}

}  // namespace

// MultiVerseMathHardResourcesServer (upstream resources_servers/math_advanced_calculations):
// counter-intuitive calculators behind a catch-all POST /{path}; verify checks that every
// ground-truth value appears among the solutions the tools returned.
// Registered by the generated builtin_environments.cpp (environments/CMakeLists.txt).
servers::Environment math_advanced_calculations_environment() {
  return {
      "math_advanced_calculations",
      "MultiVerseMathHardResourcesServer",
      [](servers::ServerContext&, http::Router& router) -> servers::VerifyRoute {
        std::vector<http::SchemaField> fields;
        for (auto name : kArgNames)
          fields.push_back({std::string(name), Schema::of(Schema::Kind::number, true), false});
        auto tool_schema = std::make_shared<const Schema>(Schema::object_of(std::move(fields)));
        auto tool_route = http::json_route(
            [](Request& req, json::value& body) -> asio::awaitable<Response> {
              co_return call_tool(req.path, body.get_object());
            },
            tool_schema);
        router.post("/{path}", tool_route);
        // FastAPI's catch-all also takes POSTs to a path that only has a GET route.
        router.post("/reverify_mode", tool_route);

        auto verify_schema = servers::verify_request_schema({
            {"ground_truth", Schema::of(Schema::Kind::any), true},
            {"id", Schema::of(Schema::Kind::integer), true},
            {"depth", Schema::of(Schema::Kind::integer), true},
            {"breadth", Schema::of(Schema::Kind::integer), true},
        });
        return {[](Request&, json::value& body) -> asio::awaitable<Response> {
                  auto errors = ground_truth_errors(body.at("ground_truth"));
                  if (!errors.empty()) co_return Response::detail(422, errors);
                  co_return Response::json(verify(body.get_object()));
                },
                verify_schema};
      },
  };
}

}  // namespace gym::environments
