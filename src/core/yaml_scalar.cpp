// Plain YAML scalars typed as yaml-cpp's YAML 1.1 resolver types them: null, booleans, ints
// (decimal, 0x, 0o/0 octal, 0b, base 60, with underscores) and floats (with .inf and .nan).
#include "core/yaml_json.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>

#include <boost/json.hpp>

namespace gym::core {
namespace json = boost::json;

namespace {

// The scalar patterns below are written out by hand instead of as std::regex (whose matching
// allocates and backtracks, and was most of the time of typing scalars); unit tests check them
// against the regular expressions they implement.

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_digit_or_underscore(char c) { return is_digit(c) || c == '_'; }

// Skips the characters of `s` from `i` on that satisfy `pred`.
template <typename Pred>
std::size_t skip(std::string_view s, std::size_t i, Pred pred) {
  while (i < s.size() && pred(s[i])) ++i;
  return i;
}

template <typename Pred>
bool nonempty_and_all(std::string_view s, Pred pred) {
  return !s.empty() && skip(s, 0, pred) == s.size();
}

std::string_view without_sign(std::string_view s) {
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  return s;
}

// `(:[0-5]?[0-9])+` from `i` on, then `end` (a character, or '\0' for the end of `s`); returns
// the position of `end`, or npos.
std::size_t skip_base60_groups(std::string_view s, std::size_t i, char end) {
  bool any = false;
  while (i < s.size() && s[i] == ':') {
    const std::size_t digits = skip(s, i + 1, is_digit) - (i + 1);
    if (digits == 0 || digits > 2 || (digits == 2 && s[i + 1] > '5')) return std::string_view::npos;
    i += 1 + digits;
    any = true;
  }
  if (!any) return std::string_view::npos;
  if (end == '\0') return i == s.size() ? i : std::string_view::npos;
  return i < s.size() && s[i] == end ? i : std::string_view::npos;
}

// PyYAML's int resolver (YAML 1.1): binary, leading-zero octal, decimal, hex, base 60.
// [-+]?(0b[01_]+|0[0-7_]+|0|[1-9][0-9_]*|0x[0-9a-fA-F_]+|[1-9][0-9_]*(:[0-5]?[0-9])+)
bool is_yaml_int(std::string_view text) {
  const std::string_view s = without_sign(text);
  if (s.empty()) return false;
  if (s.substr(0, 2) == "0b") {
    return nonempty_and_all(s.substr(2), [](char c) { return c == '0' || c == '1' || c == '_'; });
  }
  if (s.substr(0, 2) == "0x") {
    return nonempty_and_all(s.substr(2), [](char c) {
      return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '_';
    });
  }
  if (s.front() == '0') {
    return s.size() == 1 ||
           nonempty_and_all(s.substr(1), [](char c) { return (c >= '0' && c <= '7') || c == '_'; });
  }
  if (s.front() < '1' || s.front() > '9') return false;
  const std::size_t i = skip(s, 1, is_digit_or_underscore);
  return i == s.size() || skip_base60_groups(s, i, '\0') != std::string_view::npos;
}

// `[eE][-+]?[0-9]+` (with `sign_required`, `[eE][-+][0-9]+`) from `i` to the end of `s`.
bool is_exponent(std::string_view s, std::size_t i, bool sign_required) {
  if (i >= s.size() || (s[i] != 'e' && s[i] != 'E')) return false;
  ++i;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) {
    ++i;
  } else if (sign_required) {
    return false;
  }
  return nonempty_and_all(s.substr(i), is_digit);
}

// OmegaConf's float resolver, which also accepts "1e3" and "1e-3" (PyYAML alone needs a dot):
//   [-+]?( [0-9][0-9_]*\.[0-9_]*([eE][-+]?[0-9]+)?
//        | [0-9][0-9_]*[eE][-+]?[0-9]+
//        | [0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*
//        | \.(inf|Inf|INF) )
//   | \.[0-9][0-9_]*([eE][-+][0-9]+)?
//   | \.(nan|NaN|NAN)
bool is_yaml_float(std::string_view text) {
  if (text == ".nan" || text == ".NaN" || text == ".NAN") return true;
  if (text.size() >= 2 && text[0] == '.' && is_digit(text[1])) {
    const std::size_t i = skip(text, 2, is_digit_or_underscore);
    if (i == text.size() || is_exponent(text, i, true)) return true;
  }
  const std::string_view s = without_sign(text);
  if (s == ".inf" || s == ".Inf" || s == ".INF") return true;
  if (s.empty() || !is_digit(s.front())) return false;
  const std::size_t i = skip(s, 1, is_digit_or_underscore);
  if (i < s.size() && s[i] == '.') {
    const std::size_t j = skip(s, i + 1, is_digit_or_underscore);
    return j == s.size() || is_exponent(s, j, false);
  }
  if (is_exponent(s, i, false)) return true;
  const std::size_t dot = skip_base60_groups(s, i, '.');
  return dot != std::string_view::npos && skip(s, dot + 1, is_digit_or_underscore) == s.size();
}

bool is_one_of(std::string_view s, std::initializer_list<std::string_view> words) {
  for (auto w : words) {
    if (s == w) return true;
  }
  return false;
}

std::string without_underscores(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '_') out += c;
  }
  return out;
}

// Splits a leading sign off `s`; returns true when it was '-'.
bool take_sign(std::string_view& s) {
  bool negative = !s.empty() && s.front() == '-';
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  return negative;
}

std::uint64_t parse_unsigned(std::string_view digits, int base) {
  std::uint64_t v = 0;
  if (digits.empty()) return 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (ec != std::errc{} || ptr != digits.data() + digits.size()) throw std::out_of_range("int");
  return v;
}

json::value construct_int(std::string_view text) {
  std::string clean = without_underscores(text);
  std::string_view s = clean;
  bool negative = take_sign(s);
  std::uint64_t magnitude = 0;
  if (s.substr(0, 2) == "0b") {
    magnitude = parse_unsigned(s.substr(2), 2);
  } else if (s.substr(0, 2) == "0x") {
    magnitude = parse_unsigned(s.substr(2), 16);
  } else if (s.find(':') != std::string_view::npos) {
    for (std::size_t start = 0; start <= s.size();) {
      std::size_t colon = std::min(s.find(':', start), s.size());
      std::uint64_t part = parse_unsigned(s.substr(start, colon - start), 10);
      if (__builtin_mul_overflow(magnitude, 60u, &magnitude) ||
          __builtin_add_overflow(magnitude, part, &magnitude)) {
        throw std::out_of_range("int");
      }
      start = colon + 1;
    }
  } else if (s.size() > 1 && s.front() == '0') {
    magnitude = parse_unsigned(s.substr(1), 8);
  } else {
    magnitude = parse_unsigned(s, 10);
  }
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (!negative) {
    if (magnitude <= kMax) return static_cast<std::int64_t>(magnitude);
    return magnitude;  // Python keeps 2^63..2^64-1 exactly; a uint64 does too
  }
  if (magnitude > kMax + 1) throw std::out_of_range("int");
  return static_cast<std::int64_t>(0 - magnitude);
}

double parse_double(std::string_view s) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || ptr != s.data() + s.size()) throw std::out_of_range("float");
  return v;
}

json::value construct_float(std::string_view text) {
  std::string clean = without_underscores(text);
  std::string_view s = clean;
  bool negative = take_sign(s);
  double v = 0;
  if (s.size() == 4 && s.front() == '.' && (s[1] == 'i' || s[1] == 'I')) {
    v = std::numeric_limits<double>::infinity();
  } else if (s.size() == 4 && s.front() == '.' && (s[1] == 'n' || s[1] == 'N')) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (s.find(':') != std::string_view::npos) {
    for (std::size_t start = 0; start <= s.size();) {
      std::size_t colon = std::min(s.find(':', start), s.size());
      v = v * 60 + parse_double(s.substr(start, colon - start));
      start = colon + 1;
    }
  } else {
    v = parse_double(s);
  }
  return negative ? -v : v;
}

}  // namespace

json::value yaml_plain_scalar(std::string_view text) {
  if (is_one_of(text, {"", "~", "null", "Null", "NULL"})) return nullptr;
  if (is_one_of(text, {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})) return true;
  if (is_one_of(text, {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})) {
    return false;
  }
  if (is_yaml_int(text)) return construct_int(text);
  if (is_yaml_float(text)) return construct_float(text);
  return json::string(text);
}

}  // namespace gym::core
