#include "python_compat/json_equal.h"

#include "core/json_text.h"

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

namespace gym::python_compat {
namespace json = boost::json;

namespace {

// An exact integer value for numbers that have one: every int64/uint64, booleans (0 and 1),
// and floats that are integral and in range. Negative values are held as int64, non-negative
// ones as uint64.
struct Integer {
  bool negative;
  std::uint64_t magnitude;  // two's complement bits when negative
  bool operator==(const Integer&) const = default;
};

std::optional<Integer> integer_value(const json::value& v) {
  if (v.is_bool()) return Integer{false, v.get_bool() ? 1u : 0u};
  if (v.is_int64()) {
    auto i = v.get_int64();
    return Integer{i < 0, static_cast<std::uint64_t>(i)};
  }
  if (v.is_uint64()) return Integer{false, v.get_uint64()};
  double d = v.get_double();
  if (!std::isfinite(d) || d != std::trunc(d)) return std::nullopt;
  if (d < 0) {
    if (d < -9223372036854775808.0) return std::nullopt;
    return Integer{true, static_cast<std::uint64_t>(static_cast<std::int64_t>(d))};
  }
  if (d >= 18446744073709551616.0) return std::nullopt;
  return Integer{false, static_cast<std::uint64_t>(d)};
}

bool is_number(const json::value& v, BoolRule bools) {
  return v.is_number() || (bools == BoolRule::as_integers && v.is_bool());
}

// Two numbers (booleans included under BoolRule::as_integers) by exact value.
bool numbers_equal(const json::value& a, const json::value& b) {
  if (a.is_double() && b.is_double()) return a.get_double() == b.get_double();
  auto ia = integer_value(a);
  auto ib = integer_value(b);
  if (ia && ib) return *ia == *ib;
  return false;  // an integer never equals a non-integral (or huge) float
}

}  // namespace

bool json_equal(const json::value& a, const json::value& b, BoolRule bools) {
  if (is_number(a, bools) || is_number(b, bools))
    return is_number(a, bools) && is_number(b, bools) && numbers_equal(a, b);
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case json::kind::null:
      return true;
    case json::kind::bool_:
      return a.get_bool() == b.get_bool();
    case json::kind::string:
      return a.get_string() == b.get_string();
    case json::kind::array: {
      const auto& x = a.get_array();
      const auto& y = b.get_array();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!json_equal(x[i], y[i], bools)) return false;
      return true;
    }
    case json::kind::object: {
      const auto& x = a.get_object();
      const auto& y = b.get_object();
      if (x.size() != y.size()) return false;
      for (const auto& kv : x) {
        const auto* other = y.if_contains(kv.key());
        if (!other || !json_equal(kv.value(), *other, bools)) return false;
      }
      return true;
    }
    default:
      return false;  // numbers (and booleans as integers) handled above
  }
}

void append_canonical_json(const json::value& v, std::string& out) {
  switch (v.kind()) {
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: {
      if (auto i = integer_value(v)) {
        if (i->negative) {
          out += std::to_string(static_cast<std::int64_t>(i->magnitude));
        } else {
          out += std::to_string(i->magnitude);
        }
      } else {
        out += core::python_float_repr(v.get_double());
      }
      return;
    }
    case json::kind::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& item : v.get_array()) {
        if (!first) out.push_back(',');
        first = false;
        append_canonical_json(item, out);
      }
      out.push_back(']');
      return;
    }
    case json::kind::object: {
      const auto& o = v.get_object();
      std::vector<const json::key_value_pair*> members;
      members.reserve(o.size());
      for (const auto& kv : o) members.push_back(&kv);
      std::sort(members.begin(), members.end(),
                [](const auto* x, const auto* y) { return x->key() < y->key(); });
      out.push_back('{');
      bool first = true;
      for (const auto* kv : members) {
        if (!first) out.push_back(',');
        first = false;
        core::render_json(json::value(json::string(kv->key())), out);
        out.push_back(':');
        append_canonical_json(kv->value(), out);
      }
      out.push_back('}');
      return;
    }
    default:
      core::render_json(v, out);
      return;  // null, bool, string
  }
}

std::string canonical_json(const json::value& v) {
  std::string out;
  append_canonical_json(v, out);
  return out;
}

}  // namespace gym::python_compat
