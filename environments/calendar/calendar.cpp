#include "core/json_text.h"
#include "python_compat/errors.h"
#include "python_compat/json.h"
#include "python_compat/json_equal.h"
#include "python_compat/re.h"
#include "python_compat/str.h"
#include "servers/resources_server.h"

#include <boost/json.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gym::environments {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;
using http::Schema;
using python_compat::py_type_name;

namespace {

// Raised wherever upstream's grader would raise: the grader turns any exception into reward 0.
class GradingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---- Python numbers --------------------------------------------------------------------------
// Start times are Python ints; durations are whatever JSON number the model wrote, so sums and
// comparisons follow Python's int/float rules (exact comparison between an int and a float).
// Integers beyond 64 bits are approximated by floats.

struct Num {
  bool is_float = false;
  std::int64_t i = 0;
  double d = 0.0;
};

Num int_num(std::int64_t v) { return {false, v, 0.0}; }
Num float_num(double v) { return {true, 0, v}; }

// x + <JSON value> as Python evaluates it; anything but a number raises TypeError.
Num add(const Num& x, const json::value& v) {
  if (!python_compat::py_is_number(v)) throw GradingError("unsupported operand type(s) for +");
  bool int_operand = v.is_bool() || v.is_int64();
  if (!x.is_float && int_operand) {
    std::int64_t y = v.is_bool() ? (v.get_bool() ? 1 : 0) : v.get_int64();
    std::int64_t sum = 0;
    if (!__builtin_add_overflow(x.i, y, &sum)) return int_num(sum);
  }
  double a = x.is_float ? x.d : static_cast<double>(x.i);
  return float_num(a + python_compat::py_float_of(v));
}

// Three-way comparison of an int with a float, exact as Python's; nullopt when d is NaN.
std::optional<int> compare_int_float(std::int64_t i, double d) {
  if (std::isnan(d)) return std::nullopt;
  if (d >= 9223372036854775808.0) return -1;
  if (d < -9223372036854775808.0) return 1;
  double t = std::trunc(d);
  auto ti = static_cast<std::int64_t>(t);
  if (i != ti) return i < ti ? -1 : 1;
  double frac = d - t;
  return frac > 0 ? -1 : frac < 0 ? 1 : 0;
}

// Three-way comparison; nullopt when either side is NaN (every comparison is then false).
std::optional<int> compare(const Num& a, const Num& b) {
  if (!a.is_float && !b.is_float) return a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
  if (a.is_float && b.is_float) {
    if (std::isnan(a.d) || std::isnan(b.d)) return std::nullopt;
    return a.d < b.d ? -1 : a.d > b.d ? 1 : 0;
  }
  if (!a.is_float) return compare_int_float(a.i, b.d);
  auto r = compare_int_float(b.i, a.d);
  if (!r) return r;
  return -*r;
}

bool less(const Num& a, const Num& b) {
  auto c = compare(a, b);
  return c && *c < 0;
}
bool less_equal(const Num& a, const Num& b) {
  auto c = compare(a, b);
  return c && *c <= 0;
}
bool equal(const Num& a, const Num& b) {
  auto c = compare(a, b);
  return c && *c == 0;
}

// int(text) of a str: surrounding whitespace, a sign, (Unicode) decimal digits with single
// underscores between them.
Num py_int(std::string_view text) {
  static const python_compat::PyRegex pattern(R"([+-]?\d+(?:_\d+)*)");
  std::string s = python_compat::py_strip(text);
  if (!pattern.fullmatch(s)) throw GradingError("invalid literal for int() with base 10");
  std::string digits;
  bool ascii = true;
  for (char c : s) {
    if (c == '_') continue;
    if (static_cast<unsigned char>(c) >= 0x80) ascii = false;
    digits.push_back(c);
  }
  if (ascii) {
    std::int64_t v = 0;
    const char* first = digits.data() + (digits[0] == '+' ? 1 : 0);
    auto [end, ec] = std::from_chars(first, digits.data() + digits.size(), v);
    if (ec == std::errc{} && end == digits.data() + digits.size()) return int_num(v);
  }
  double d = *python_compat::py_float(digits);
  if (std::fabs(d) < 9.2e18) return int_num(static_cast<std::int64_t>(d));
  return float_num(d);
}

// ---- the grader (upstream utils.py) -----------------------------------------------------------

std::vector<std::string> split(std::string_view s, std::string_view sep) {
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    auto at = s.find(sep, start);
    if (at == std::string_view::npos) {
      parts.emplace_back(s.substr(start));
      return parts;
    }
    parts.emplace_back(s.substr(start, at - start));
    start = at + sep.size();
  }
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// Hours and minutes as 12-hour ("2pm", "10:30am") or 24-hour ("14:00") text, in minutes. No
// range checks: "13pm" is 1500 and "12am" is 0.
Num time_to_minutes(const json::value& value) {
  if (!value.is_string()) throw GradingError("'" + py_type_name(value) + "' has no strip()");
  std::string t = python_compat::py_strip(value.get_string());
  auto hour_minute = [](const std::string& text) {
    auto parts = split(text, ":");
    if (parts.size() != 2) throw GradingError("wrong number of values to unpack");
    return std::pair<Num, Num>{py_int(parts[0]), py_int(parts[1])};
  };
  auto times = [](const Num& a, std::int64_t k) {
    if (a.is_float) return float_num(a.d * static_cast<double>(k));
    std::int64_t r = 0;
    if (__builtin_mul_overflow(a.i, k, &r)) return float_num(static_cast<double>(a.i) * k);
    return int_num(r);
  };
  auto plus = [](const Num& a, const Num& b) {
    if (a.is_float || b.is_float)
      return float_num((a.is_float ? a.d : static_cast<double>(a.i)) +
                       (b.is_float ? b.d : static_cast<double>(b.i)));
    std::int64_t r = 0;
    if (__builtin_add_overflow(a.i, b.i, &r))
      return float_num(static_cast<double>(a.i) + static_cast<double>(b.i));
    return int_num(r);
  };
  // `hour * 60 if hour != 12 else 0`
  auto hour_minutes = [&](const Num& hour) {
    return equal(hour, int_num(12)) ? int_num(0) : times(hour, 60);
  };
  bool am = contains(t, "am");
  if (am || contains(t, "pm")) {
    std::string rest = python_compat::py_replace(t, am ? "am" : "pm", "");
    Num offset = am ? int_num(0) : int_num(12 * 60);
    if (!contains(t, ":")) return plus(hour_minutes(py_int(rest)), offset);
    auto [hour, minute] = hour_minute(rest);
    return plus(plus(hour_minutes(hour), offset), minute);
  }
  auto [hours, minutes] = hour_minute(t);
  return plus(times(hours, 60), minutes);
}

// The first JSON list that contains an object, or null when none parses.
std::optional<json::value> extract_json_list(std::string_view text) {
  static const python_compat::PyRegex pattern(
      R"(\[(?:[^\[\]]|\{[^}]*\})*\{(?:[^\[\]]|\{[^}]*\})*\}(?:[^\[\]]|\{[^}]*\})*\])",
      python_compat::PyRegex::kDotAll);
  auto m = pattern.search(text);
  if (!m) return std::nullopt;
  try {
    return python_compat::py_json_loads(m->group());
  } catch (const python_compat::JSONDecodeError&) {
    return std::nullopt;
  }
}

const json::value& item(const json::value& container, std::string_view key) {
  const auto* o = container.if_object();
  const auto* v = o ? o->if_contains(key) : nullptr;
  if (!v) throw GradingError("no " + std::string(key));
  return *v;
}

// str(v) of the value json.loads builds.
std::string py_str(const json::value& v);
std::string py_repr_value(const json::value& v) {
  return v.is_string() ? python_compat::py_repr(v.get_string()) : py_str(v);
}
std::string py_str(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return std::string(v.get_string());
    case json::kind::null:
      return "None";
    case json::kind::bool_:
      return v.get_bool() ? "True" : "False";
    case json::kind::int64:
      return std::to_string(v.get_int64());
    case json::kind::uint64:
      return std::to_string(v.get_uint64());
    case json::kind::double_:
      return core::python_float_repr(v.get_double());
    case json::kind::array: {
      std::string out = "[";
      for (const auto& e : v.get_array()) out += (out.size() > 1 ? ", " : "") + py_repr_value(e);
      return out + "]";
    }
    case json::kind::object: {
      std::string out = "{";
      for (const auto& kv : v.get_object())
        out += (out.size() > 1 ? ", " : "") + python_compat::py_repr(kv.key()) + ": " +
               py_repr_value(kv.value());
      return out + "}";
    }
  }
  return "";
}

// `a == b` of two values from one json.loads, as dict and list equality compares their members
// (identity first): json.loads makes one shared object of every NaN literal, so NaN members are
// equal to each other there, unlike NaN == NaN.
bool members_equal(const json::value& a, const json::value& b) {
  if (a.is_double() && b.is_double() && std::isnan(a.get_double()) && std::isnan(b.get_double()))
    return true;
  if (a.is_array() && b.is_array()) {
    const auto& x = a.get_array();
    const auto& y = b.get_array();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (!members_equal(x[i], y[i])) return false;
    return true;
  }
  if (a.is_object() && b.is_object()) {
    const auto& x = a.get_object();
    const auto& y = b.get_object();
    if (x.size() != y.size()) return false;
    for (const auto& kv : x) {
      const auto* other = y.if_contains(kv.key());
      if (!other || !members_equal(kv.value(), *other)) return false;
    }
    return true;
  }
  return python_compat::json_equal(a, b, python_compat::BoolRule::as_integers);
}

// is_event_conflicting(events, events[index], exclude_event=events[index]): the event itself
// and every event equal to it (dict ==) are skipped.
bool conflicts(const json::array& events, std::size_t index) {
  const json::value& event = events[index];
  Num start = time_to_minutes(item(event, "start_time"));
  Num end = add(start, item(event, "duration"));
  for (std::size_t j = 0; j < events.size(); ++j) {
    if (j == index || members_equal(events[j], event)) continue;
    Num other_start = time_to_minutes(item(events[j], "start_time"));
    Num other_end = add(other_start, item(events[j], "duration"));
    if (!(less_equal(end, other_start) || less_equal(other_end, start))) return true;
  }
  return false;
}

bool constraint_satisfied(const json::value& event, const json::value& expected) {
  if (!python_compat::json_equal(item(event, "duration"), item(expected, "duration"),
                                 python_compat::BoolRule::as_integers))
    return false;
  Num min_time = time_to_minutes(item(expected, "min_time"));
  Num max_time = time_to_minutes(item(expected, "max_time"));
  Num start = time_to_minutes(item(event, "start_time"));
  Num end = add(start, item(event, "duration"));
  if (less(start, min_time) || less(max_time, end)) return false;

  const json::value& constraint = item(expected, "constraint");
  if (constraint.is_null()) return true;
  if (!constraint.is_string())
    throw GradingError("'" + py_type_name(constraint) + "' has no startswith()");
  std::string_view c = constraint.get_string();
  auto after_prefix = [&](std::string_view prefix) {
    return json::value(python_compat::py_replace(c, prefix, ""));
  };
  if (c.starts_with("before ")) return less_equal(end, time_to_minutes(after_prefix("before ")));
  if (c.starts_with("after ")) return less_equal(time_to_minutes(after_prefix("after ")), start);
  if (c.starts_with("between ")) {
    auto parts = split(python_compat::py_replace(c, "between ", ""), " and ");
    if (parts.size() != 2) throw GradingError("Invalid 'between' constraint format");
    Num x = time_to_minutes(json::value(parts[0]));
    Num y = time_to_minutes(json::value(parts[1]));
    return less_equal(x, start) && less_equal(end, y);
  }
  if (c.starts_with("at ")) return equal(start, time_to_minutes(after_prefix("at ")));
  return true;  // an unknown constraint is satisfied
}

// grade_assistant_response(...) == 1, with allow_no_json_list False.
bool grade(std::string_view response, const json::object& expected) {
  if (contains(response, "<think>")) return false;
  if (expected.empty()) return true;
  auto calendar = extract_json_list(response);
  if (!calendar || !calendar->is_array() || calendar->get_array().empty()) return false;
  const json::array& events = calendar->get_array();

  json::object by_id;  // str(event["event_id"]) -> event, the last one winning
  for (const auto& event : events) by_id[py_str(item(event, "event_id"))] = event;
  if (by_id.size() != expected.size()) return false;
  for (std::size_t i = 0; i < events.size(); ++i)
    if (conflicts(events, i)) return false;
  for (const auto& kv : expected) {
    const auto* event = by_id.if_contains(kv.key());
    if (!event) throw GradingError("KeyError");
    if (!constraint_satisfied(*event, kv.value())) return false;
  }
  return true;
}

// ---- verify ------------------------------------------------------------------------------------

// `output[-1].content[0].text` when the last item has a non-empty content: a message's first
// part, or a reasoning item's first reasoning text. A first part without text raises (500), as
// the attribute access does upstream.
std::string last_output_text(const json::array& output) {
  if (output.empty()) return "";
  const auto* last = output.back().if_object();
  if (!last) return "";
  const auto* type = last->if_contains("type");
  if (!type || (*type != "message" && *type != "reasoning")) return "";
  const auto* content = last->if_contains("content");
  if (!content) return "";
  if (content->is_string()) {
    if (content->get_string().empty()) return "";
    throw python_compat::AttributeError("'str' object has no attribute 'text'");
  }
  if (!content->is_array() || content->get_array().empty()) return "";
  const auto* part = content->get_array()[0].if_object();
  const auto* part_type = part ? part->if_contains("type") : nullptr;
  const auto* text = part ? part->if_contains("text") : nullptr;
  if (part_type && (*part_type == "output_text" || *part_type == "reasoning_text") && text &&
      text->is_string())
    return std::string(text->get_string());
  if (part_type && *part_type == "refusal")
    throw python_compat::AttributeError(
        "'NeMoGymResponseOutputRefusal' object has no attribute 'text'");
  throw python_compat::AttributeError("'dict' object has no attribute 'text'");
}

json::object verify(const json::object& row) {
  std::string response = last_output_text(row.at("response").at("output").get_array());
  double reward = 0.0;
  if (!response.empty()) {
    try {
      reward = grade(response, row.at("exp_cal_state").get_object()) ? 1.0 : 0.0;
    } catch (const std::exception&) {
      reward = 0.0;  // upstream: `except Exception: reward = 0`
    }
  }
  return servers::verify_response(row, reward);
}

}  // namespace

// CalendarResourcesServer (upstream resources_servers/calendar): the assistant keeps a calendar
// over a multi-turn conversation; verify parses the JSON list in its last answer and checks
// every expected event's duration, window and constraint, and that no two events overlap.
// Registered by the generated builtin_environments.cpp (environments/CMakeLists.txt).
servers::Environment calendar_environment() {
  return {
      "calendar",
      "CalendarResourcesServer",
      [](servers::ServerContext&, http::Router&) -> servers::VerifyRoute {
        auto verify_schema = servers::verify_request_schema({
            {"exp_cal_state", Schema::of(Schema::Kind::dict), true},
        });
        return {[](Request&, json::value& body) -> asio::awaitable<Response> {
                  co_return Response::json(verify(body.get_object()));
                },
                verify_schema};
      },
  };
}

}  // namespace gym::environments
