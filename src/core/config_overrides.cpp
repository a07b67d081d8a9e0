// Command-line overrides: key=v replaces, +key=v adds, ++key=v does either
// (docs/reference/configuration.md#overrides).
#include <charconv>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "core/config.h"
#include "core/config_steps.h"
#include "core/yaml_json.h"

namespace gym::core {
namespace json = boost::json;

Override parse_override(std::string_view text) {
  Override o;
  o.text = std::string(text);
  std::size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    throw ConfigError(
        fmt::format("config error: override '{}' has no '='; write key=value to "
                    "replace a key, +key=value to add one, ++key=value for either",
                    text));
  }
  std::string_view key = text.substr(0, eq);
  while (!key.empty() && key.front() == '+') {
    ++o.pluses;
    key.remove_prefix(1);
  }
  if (o.pluses > 2 || key.empty()) {
    throw ConfigError(
        fmt::format("config error: override '{}' needs a key: key=value, +key=value "
                    "or ++key=value",
                    text));
  }
  o.key = std::string(key);
  std::string_view raw = text.substr(eq + 1);
  if (raw.empty()) {
    o.value = "";
    return o;
  }
  try {
    o.value = parse_yaml(raw, fmt::format("override '{}'", text));
  } catch (const ConfigError&) {
    // Text such as *.jsonl or @file is not valid YAML; keep it as a string, but a broken list,
    // mapping or quoted string is a mistake worth reporting.
    if (raw.find_first_of("[{\"'") == 0) throw;
    o.value = std::string(raw);
  }
  return o;
}

namespace {

[[noreturn]] void override_error(const Override& o, const std::string& message) {
  throw ConfigError(fmt::format("config error: cannot apply override '{}': {}", o.text, message));
}

}  // namespace

void apply_override(json::object& cfg, const Override& o, ConfigOrigins* origins) {
  std::vector<std::string> parts = split_path(o.key);
  if (parts.empty()) override_error(o, "the key is empty");
  if (o.key.front() == '.' || o.key.back() == '.' || o.key.find("..") != std::string::npos)
    override_error(o, "the key '" + o.key + "' has an empty part between dots");
  json::value* container = nullptr;  // null stands for `cfg` itself
  std::string path;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    bool last = i + 1 == parts.size();
    json::value* slot = nullptr;
    if (container && container->is_array()) {
      json::array& list = container->as_array();
      std::size_t index = 0;
      auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), index);
      if (ec != std::errc{} || ptr != part.data() + part.size() || index >= list.size()) {
        override_error(o, fmt::format("'{}' is a list of {} items; '{}' is not an index in it",
                                      path, list.size(), part));
      }
      path = child_path(path, index);
      slot = &list[index];
    } else {
      json::object& object = container ? container->as_object() : cfg;
      std::string parent = path;
      path = child_path(path, part);
      slot = object.if_contains(part);
      if (!slot && o.pluses == 0) {
        std::vector<std::string> keys;
        for (const auto& entry : object) keys.emplace_back(entry.key());
        auto guess = did_you_mean(part, keys);
        override_error(
            o, fmt::format(
                   "key '{}' does not exist{}; to add it, write +{}", path,
                   guess ? fmt::format(" (did you mean '{}'?)", child_path(parent, *guess)) : "",
                   o.text));
      }
      if (last && slot && o.pluses == 1) {
        std::string origin = origins ? origins->find(path) : "";
        override_error(o, fmt::format("key '{}' already exists{}; to replace it, write +{}", path,
                                      origin.empty() ? "" : " (set in " + origin + ")", o.text));
      }
      if (!slot) slot = &(object[part] = nullptr);
    }
    if (last) {
      *slot = o.value;
      break;
    }
    if (slot->is_null() && o.pluses > 0) *slot = json::object();
    if (!slot->is_object() && !slot->is_array()) {
      override_error(o, fmt::format("'{}' is {}, not a mapping or list", path, describe(*slot)));
    }
    container = slot;
  }
  if (origins) origins->record(o.value, "the command line (" + o.text + ")", path);
}

void apply_override(json::object& cfg, std::string_view override_text, ConfigOrigins* origins) {
  apply_override(cfg, parse_override(override_text), origins);
}

}  // namespace gym::core
