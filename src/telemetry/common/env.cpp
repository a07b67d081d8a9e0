#include "telemetry/common/env.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

namespace gym::telemetry {
using core::ConfigError;

std::string trimmed(std::string_view s) {
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return std::string(s);
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

GetEnv process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

std::optional<EnvValue> first_env(const GetEnv& getenv,
                                  std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (n.empty()) continue;
    if (auto v = getenv(std::string(n))) {
      std::string t = trimmed(*v);
      if (!t.empty()) return EnvValue{std::string(n), std::move(t)};
    }
  }
  return std::nullopt;
}

std::chrono::milliseconds parse_positive_ms(const EnvValue& e) {
  auto v = parse_number<std::int64_t>(e.value);
  if (!v || *v <= 0) {
    throw ConfigError(fmt::format(
        "config error: {}='{}' must be a positive whole number of milliseconds", e.name, e.value));
  }
  return std::chrono::milliseconds(*v);
}

bool parse_bool(std::string_view variable, std::string_view value) {
  std::string v = lowercase(trimmed(value));
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  throw ConfigError(
      fmt::format("config error: {}='{}' is not a boolean; accepted spellings are "
                  "1, true, yes, on (true) and 0, false, no, off (false), in any "
                  "case",
                  variable, value));
}

std::string percent_decode(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::optional<std::vector<std::pair<std::string, std::string>>> parse_key_values(
    std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view entry = text.substr(start, comma - start);
    start = comma + 1;
    if (trimmed(entry).empty()) continue;
    std::size_t eq = entry.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    std::string key = trimmed(entry.substr(0, eq));
    if (key.empty()) return std::nullopt;
    out.emplace_back(std::move(key), percent_decode(trimmed(entry.substr(eq + 1))));
  }
  return out;
}

}  // namespace gym::telemetry
