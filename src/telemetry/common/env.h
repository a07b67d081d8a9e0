#pragma once
// Reading the telemetry variables (NEMO_GYM_OTEL_*, OTEL_*): what every signal's settings and the
// exporters' share. Every invalid value is a core::ConfigError naming the variable and the value.
#include <charconv>
#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/config.h"

namespace gym::telemetry {

using core::GetEnv;

// ::getenv as a GetEnv.
GetEnv process_env();

// A variable that is set: its name and its value, trimmed (never empty).
struct EnvValue {
  std::string name;
  std::string value;
};

// The first of `names` that is set to something other than whitespace; empty names are skipped.
std::optional<EnvValue> first_env(const GetEnv& getenv,
                                  std::initializer_list<std::string_view> names);

// Boolean spellings of the telemetry variables (trimmed, case-insensitive): 1/true/yes/on and
// 0/false/no/off. Anything else is a ConfigError naming `variable`, the value and the accepted
// spellings.
bool parse_bool(std::string_view variable, std::string_view value);

// The value of `e` as a positive whole number of milliseconds; anything else is a ConfigError
// naming the variable and the value.
std::chrono::milliseconds parse_positive_ms(const EnvValue& e);

// `k=v,k2=v2`: keys and values trimmed, values percent-decoded. nullopt when an entry has no
// '=' or an empty key.
std::optional<std::vector<std::pair<std::string, std::string>>> parse_key_values(
    std::string_view text);

// %XX sequences decoded; invalid sequences are kept as they are.
std::string percent_decode(std::string_view text);

// `s` without white space at either end; `s` in lower case (ASCII).
std::string trimmed(std::string_view s);
std::string lowercase(std::string_view s);

// The whole of `s` (a leading '+' allowed) as a number of type T; none for anything else.
template <typename T>
std::optional<T> parse_number(std::string_view s) {
  T v{};
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace gym::telemetry
