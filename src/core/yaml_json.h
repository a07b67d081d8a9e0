// YAML <-> boost::json conversion with the scalar typing of PyYAML's SafeLoader as OmegaConf
// configures it (YAML 1.1 booleans and octals, OmegaConf's wider float pattern, no timestamps),
// so a config file means the same thing here as in NeMo Gym.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "core/json_text.h"  // python_float_repr

namespace gym::core {

// The largest YAML text a config source may be (a file, NEMO_GYM_CONFIG_DICT, an override).
inline constexpr std::size_t kMaxYamlBytes = 16u << 20;
// How many values aliases (*name) may add to a document beyond about one per byte of its text.
inline constexpr std::size_t kMaxYamlAliasValues = 1'000'000;
// How deeply values may nest, as for JSON bodies (Python's recursion limit); an alias inside its
// own anchor (`a: &a [*a]`) would nest forever.
inline constexpr std::size_t kMaxYamlDepth = 1000;

// Parses one YAML document. `origin` (a file path or "<NEMO_GYM_CONFIG_DICT>") names the source
// in errors; syntax errors become ConfigError with origin, line and column. Quoted scalars are
// strings, plain scalars are typed by yaml_plain_scalar, `<<` merge keys are applied, and a
// duplicate key keeps its first position and its last value. An empty document is null. A text
// over kMaxYamlBytes, aliases adding more than kMaxYamlAliasValues values, or values nested
// deeper than kMaxYamlDepth, is a ConfigError.
boost::json::value parse_yaml(std::string_view text, std::string_view origin);

// Reads and parses a YAML file; ConfigError when it is missing, unreadable or larger than
// kMaxYamlBytes (read no further than that: /dev/zero fails at once).
boost::json::value load_yaml_file(const std::string& path);

// Block-style YAML that parse_yaml reads back to an equal tree: strings that would be typed
// otherwise ("yes", "123", "null", "") are quoted, doubles always carry a '.' or exponent.
std::string to_yaml(const boost::json::value& v);

// The value of an unquoted scalar: null (~, null, empty), bool (true/yes/on, false/no/off in
// three capitalisations), int (decimal with '_', 0x hex, 0b binary, leading-0 octal, base-60
// "1:30"), double (1.5, 1., 1e-3, .5, 1:30.5, .inf, .nan), otherwise the string itself.
// Throws std::out_of_range for an integer that does not fit in 64 bits.
boost::json::value yaml_plain_scalar(std::string_view text);

}  // namespace gym::core
