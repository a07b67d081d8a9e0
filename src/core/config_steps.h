// The steps load_config runs after merging, and helpers the config sources share. Not part of
// the public API; tests call the steps one at a time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "core/config.h"

namespace gym::core {

// _inherit_from / ${inherit_from:a.b} (move a.b here, own keys merged over it), _copy /
// ${copy:a.b} (the same, keeping a.b), _delete_key: "k1, k2" (drop keys from this block).
void apply_directives(boost::json::object& cfg, const ConfigOrigins& origins);

// One ConfigError listing every value that is still `???`.
void check_missing_values(const boost::json::object& cfg, const ConfigOrigins& origins);

// ${a.b} (absolute path; the whole value keeps the referenced type, embedded it becomes text),
// ${oc.env:VAR} and ${oc.env:VAR,default}; \${ stays a literal "${".
void resolve_interpolations(boost::json::object& cfg, const ConfigOrigins& origins,
                            const GetEnv& getenv);

// head_server, port range, dry_run, readiness timeout, skip_verification* into agents.
void fill_defaults(boost::json::object& cfg, const ConfigOrigins& origins);

// One command-line override, parsed.
struct Override {
  std::string text;  // as given, for messages
  int pluses = 0;    // 0: replace existing, 1: add new, 2: add or replace
  std::string key;
  boost::json::value value;
};
// ConfigError for text without '=' or without a key. The value is YAML; text that is not (*.jsonl,
// @file) stays a string, but a broken list, mapping or quoted string is an error.
Override parse_override(std::string_view text);
// ConfigError naming the key (with a did-you-mean) for a key that does not exist without a '+',
// one that exists with one '+', or a path through something that is no mapping or list.
void apply_override(boost::json::object& cfg, const Override& o, ConfigOrigins* origins);

// "a.b[0].c" and "a.b.0.c" -> {"a", "b", "0", "c"}.
std::vector<std::string> split_path(std::string_view dotted);

// ConfigError naming the key when a string (or key) under `v` is not UTF-8 text without control
// characters (tab, newline and carriage return are allowed).
void check_text(const boost::json::value& v, const ConfigOrigins& origins, const std::string& path);

// Extends a display path: "a" + "b" -> "a.b"; "a" + index 2 -> "a[2]".
std::string child_path(const std::string& parent, std::string_view key);
std::string child_path(const std::string& parent, std::size_t index);

// "config error in <file>: " for `key`, or "config error: " when its origin is unknown.
std::string error_prefix(const ConfigOrigins* origins, std::string_view key);

// A short, single-line rendering of a value for messages.
std::string describe(const boost::json::value& v);

}  // namespace gym::core
