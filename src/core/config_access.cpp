// Typed lookups, dotted paths, key origins and message helpers.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "core/config.h"
#include "core/config_steps.h"
#include "core/yaml_json.h"

namespace gym::core {
namespace json = boost::json;

void ConfigOrigins::set(const std::string& dotted, const std::string& origin) {
  by_key_[dotted] = origin;
}

void ConfigOrigins::record(const json::value& tree, const std::string& origin,
                           const std::string& prefix) {
  if (!prefix.empty()) set(prefix, origin);
  if (!tree.is_object()) return;
  for (const auto& [key, value] : tree.get_object()) {
    record(value, origin, child_path(prefix, key));
  }
}

std::string ConfigOrigins::find(std::string_view dotted) const {
  while (!dotted.empty()) {
    if (auto it = by_key_.find(dotted); it != by_key_.end()) return it->second;
    std::size_t cut = dotted.find_last_of(".[");
    dotted = dotted.substr(0, cut == std::string_view::npos ? 0 : cut);
  }
  return {};
}

std::vector<std::string> split_path(std::string_view dotted) {
  std::vector<std::string> parts;
  std::string current;
  for (char c : dotted) {
    if (c == '.' || c == '[' || c == ']') {
      if (!current.empty()) parts.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) parts.push_back(std::move(current));
  return parts;
}

std::string child_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string child_path(const std::string& parent, std::size_t index) {
  return fmt::format("{}[{}]", parent, index);
}

std::string error_prefix(const ConfigOrigins* origins, std::string_view key) {
  std::string origin = origins ? origins->find(key) : std::string();
  return origin.empty() ? "config error: " : "config error in " + origin + ": ";
}

std::string describe(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return fmt::format("'{}'", std::string_view(v.get_string()));
    case json::kind::double_:
      return python_float_repr(v.get_double());
    case json::kind::object:
    case json::kind::array: {
      std::string text = json::serialize(v);
      return text.size() > 80 ? text.substr(0, 77) + "..." : text;
    }
    default:
      return json::serialize(v);
  }
}

const json::value* find_path(const json::object& cfg, std::string_view dotted) {
  const json::value* node = nullptr;
  const json::object* object = &cfg;
  for (const auto& part : split_path(dotted)) {
    if (object) {
      node = object->if_contains(part);
    } else if (node && node->is_array()) {
      std::size_t index = 0;
      auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), index);
      bool valid = ec == std::errc{} && ptr == part.data() + part.size();
      node = valid && index < node->get_array().size() ? &node->get_array()[index] : nullptr;
    } else {
      node = nullptr;
    }
    if (!node) return nullptr;
    object = node->if_object();
  }
  return node;
}

namespace {

// The value at `dotted`, or null when absent or null (both mean "use the default").
const json::value* present(const json::object& cfg, std::string_view dotted) {
  const json::value* v = find_path(cfg, dotted);
  return v && !v->is_null() ? v : nullptr;
}

[[noreturn]] void bad_value(std::string_view dotted, std::string_view rule, const json::value& got,
                            std::string_view example) {
  throw ConfigError(
      fmt::format("config error: config key `{}` must be {}, got {}; set it with "
                  "++{}={}",
                  dotted, rule, describe(got), dotted, example));
}

template <typename T>
std::optional<T> parse_number(std::string_view s) {
  T v{};
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> as_int(const json::value& v) {
  constexpr double kLimit = 9223372036854775808.0;  // 2^63
  switch (v.kind()) {
    case json::kind::int64:
      return v.get_int64();
    case json::kind::uint64:
      if (v.get_uint64() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return static_cast<std::int64_t>(v.get_uint64());
      }
      return std::nullopt;
    case json::kind::double_: {
      double d = v.get_double();
      if (std::isfinite(d) && d == std::trunc(d) && d >= -kLimit && d < kLimit) {
        return static_cast<std::int64_t>(d);
      }
      return std::nullopt;
    }
    case json::kind::string:
      return parse_number<std::int64_t>(v.get_string());
    default:
      return std::nullopt;
  }
}

std::optional<double> as_double(const json::value& v) {
  switch (v.kind()) {
    case json::kind::int64:
      return static_cast<double>(v.get_int64());
    case json::kind::uint64:
      return static_cast<double>(v.get_uint64());
    case json::kind::double_:
      return v.get_double();
    case json::kind::string:
      return parse_number<double>(v.get_string());
    default:
      return std::nullopt;
  }
}

template <typename T>
std::string range_rule(std::string_view noun, T min, T max) {
  // Limits at (or beyond, for +-infinity) the type's extremes mean "unbounded".
  bool has_min = min > std::numeric_limits<T>::lowest();
  bool has_max = max < std::numeric_limits<T>::max();
  if (has_min && has_max) return fmt::format("{} between {} and {}", noun, min, max);
  if (has_min) return fmt::format("{} >= {}", noun, min);
  if (has_max) return fmt::format("{} <= {}", noun, max);
  return std::string(noun);
}

}  // namespace

std::int64_t get_int(const json::object& cfg, std::string_view dotted, std::int64_t def,
                     std::int64_t min, std::int64_t max) {
  const json::value* v = present(cfg, dotted);
  if (!v) return def;
  auto i = as_int(*v);
  if (!i || *i < min || *i > max) {
    bad_value(dotted, range_rule("an integer", min, max), *v,
              std::to_string(std::clamp(def, min, max)));
  }
  return *i;
}

double get_double(const json::object& cfg, std::string_view dotted, double def, double min,
                  double max) {
  const json::value* v = present(cfg, dotted);
  if (!v) return def;
  auto d = as_double(*v);
  if (!d || !(*d >= min && *d <= max)) {  // written so that NaN fails
    bad_value(dotted, range_rule("a number", min, max), *v,
              python_float_repr(std::clamp(def, min, max)));
  }
  return *d;
}

bool get_bool(const json::object& cfg, std::string_view dotted, bool def) {
  const json::value* v = present(cfg, dotted);
  if (!v) return def;
  if (v->is_bool()) return v->get_bool();
  if (v->is_string()) {
    std::string lower(v->get_string());
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower == "true") return true;
    if (lower == "false") return false;
  }
  bad_value(dotted, "true or false", *v, def ? "true" : "false");
}

std::string get_string(const json::object& cfg, std::string_view dotted, std::string_view def) {
  const json::value* v = present(cfg, dotted);
  if (!v) return std::string(def);
  switch (v->kind()) {
    case json::kind::string:
      return std::string(v->get_string());
    case json::kind::int64:
    case json::kind::uint64:
      return json::serialize(*v);
    case json::kind::double_:
      return python_float_repr(v->get_double());
    default:
      bad_value(dotted, "a string", *v, def.empty() ? "<text>" : def);
  }
}

}  // namespace gym::core
