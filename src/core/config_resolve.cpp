// The steps after merging: directives, `???` check, interpolation
// (docs/reference/configuration.md#directives and the sections after it).
#include <algorithm>
#include <charconv>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "core/config.h"
#include "core/config_steps.h"
#include "core/yaml_json.h"

namespace gym::core {
namespace json = boost::json;

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_missing_marker(const json::value& v) { return v.is_string() && v.get_string() == "???"; }

std::vector<std::string> keys_of(const json::object& object) {
  std::vector<std::string> keys;
  for (const auto& entry : object) keys.emplace_back(entry.key());
  return keys;
}

// Follows `parts` from `root`. Returns the node, or null with `deepest` set to the last mapping
// reached (for suggestions); `through_missing` tells that a `???` sat on the way.
struct Lookup {
  json::value* node = nullptr;
  const json::object* deepest = nullptr;
  std::string deepest_path;
  std::string path;  // display path of `node`
  bool through_missing = false;
};

Lookup lookup(json::object& root, const std::vector<std::string>& parts) {
  Lookup r;
  json::value* node = nullptr;
  json::object* object = &root;
  for (const auto& part : parts) {
    if (object) {
      r.deepest = object;
      r.deepest_path = r.path;
      node = object->if_contains(part);
      r.path = child_path(r.path, part);
    } else if (node && node->is_array()) {
      std::size_t index = 0;
      auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), index);
      bool ok = ec == std::errc{} && ptr == part.data() + part.size();
      node = ok && index < node->get_array().size() ? &node->as_array()[index] : nullptr;
      r.path = child_path(r.path, index);
    } else {
      r.through_missing = node && is_missing_marker(*node);
      node = nullptr;
    }
    if (!node) return r;
    object = node->if_object();
  }
  r.node = node;
  return r;
}

std::string suggestion(const Lookup& r, const std::vector<std::string>& parts) {
  if (!r.deepest) return "";
  std::size_t depth = split_path(r.deepest_path).size();
  if (depth >= parts.size()) return "";
  auto guess = did_you_mean(parts[depth], keys_of(*r.deepest));
  return guess ? fmt::format(" (did you mean '{}'?)", child_path(r.deepest_path, *guess)) : "";
}

// ---- directives ----

struct Directive {
  bool move = false;  // _inherit_from moves the source; _copy keeps it
  std::string source;
};

std::optional<Directive> string_directive(const json::value& v) {
  if (!v.is_string()) return std::nullopt;
  std::string_view s = v.get_string();
  for (auto [prefix, move] : {std::pair{std::string_view("${inherit_from:"), true},
                              std::pair{std::string_view("${copy:"), false}}) {
    if (s.size() > prefix.size() && s.substr(0, prefix.size()) == prefix && s.back() == '}') {
      return Directive{move,
                       std::string(trim(s.substr(prefix.size(), s.size() - prefix.size() - 1)))};
    }
  }
  return std::nullopt;
}

class DirectiveResolver {
 public:
  DirectiveResolver(json::object& cfg, const ConfigOrigins& origins)
      : cfg_(cfg), frozen_(cfg), origins_(origins) {}

  void run() {
    for (auto& entry : cfg_) visit(entry.value(), std::string(entry.key()));
    // Moves erase their sources only now, so the traversal above never loses its place; sources
    // are read from the frozen copy, so several blocks may inherit from the same one.
    for (const auto& path : moved_) {
      std::vector<std::string> parts = split_path(path);
      std::string last = parts.back();
      parts.pop_back();
      Lookup parent = lookup(cfg_, parts);
      json::object* object = parts.empty() ? &cfg_
                             : parent.node ? parent.node->if_object()
                                           : nullptr;
      if (object) object->stable_erase(last);
    }
  }

 private:
  void visit(json::value& v, const std::string& path) {
    if (v.is_array()) {
      for (std::size_t i = 0; i < v.get_array().size(); ++i) {
        visit(v.as_array()[i], child_path(path, i));
      }
      return;
    }
    if (auto d = string_directive(v)) {
      v = inherit(*d, nullptr, path);
      return;
    }
    if (!v.is_object()) return;
    json::object& block = v.as_object();
    // Own keys go first; the rest must come with the inherited block (as in NeMo Gym).
    std::vector<std::string> deletes = take_delete_keys(block, path);
    std::erase_if(deletes, [&](const std::string& key) { return block.stable_erase(key) > 0; });
    for (auto& entry : block) visit(entry.value(), child_path(path, entry.key()));

    std::optional<Directive> d;
    for (auto [key, move] : {std::pair{"_inherit_from", true}, std::pair{"_copy", false}}) {
      const json::value* source = block.if_contains(key);
      if (!source) continue;
      if (d || !source->is_string()) {
        throw ConfigError(
            fmt::format("{}key '{}' needs one of `_inherit_from` or `_copy`, "
                        "holding a dotted path such as policy_model",
                        error_prefix(&origins_, path), path));
      }
      d = Directive{move, std::string(trim(source->get_string()))};
    }
    if (!d) return;
    block.stable_erase(d->move ? "_inherit_from" : "_copy");
    json::object own = std::move(block);
    v = inherit(*d, &own, path);
    for (const auto& key : deletes) {
      if (v.is_object() && v.as_object().stable_erase(key)) continue;
      throw ConfigError(
          fmt::format("{}key '{}' has `_delete_key: {}`, but '{}' has no key '{}' "
                      "to delete",
                      error_prefix(&origins_, path), path, key, d->source, key));
    }
  }

  std::vector<std::string> take_delete_keys(json::object& block, const std::string& path) {
    std::vector<std::string> keys;
    json::value* v = block.if_contains("_delete_key");
    if (!v) return keys;
    if (!v->is_string()) {
      throw ConfigError(
          fmt::format("{}key '{}._delete_key' must be a comma-separated string of "
                      "keys, e.g. \"k1, k2\"; got {}",
                      error_prefix(&origins_, path), path, describe(*v)));
    }
    std::string_view rest = v->get_string();
    while (!rest.empty()) {
      std::size_t comma = std::min(rest.find(','), rest.size());
      if (auto key = trim(rest.substr(0, comma)); !key.empty()) keys.emplace_back(key);
      rest.remove_prefix(std::min(comma + 1, rest.size()));
    }
    block.stable_erase("_delete_key");
    return keys;
  }

  // The source subtree with `own` keys merged over it.
  json::value inherit(const Directive& d, const json::object* own, const std::string& path) {
    std::vector<std::string> parts = split_path(d.source);
    Lookup found = lookup(frozen_, parts);
    if (found.through_missing || (found.node && is_missing_marker(*found.node))) {
      return "???";  // reported with every other unset value by check_missing_values
    }
    if (!found.node) {
      throw ConfigError(
          fmt::format("{}key '{}' inherits from '{}', which does not exist{}; give "
                      "an absolute dotted path",
                      error_prefix(&origins_, path), path, d.source, suggestion(found, parts)));
    }
    if (std::find(active_.begin(), active_.end(), found.path) != active_.end()) {
      throw ConfigError(fmt::format("{}key '{}' inherits from '{}', which inherits back from it",
                                    error_prefix(&origins_, path), path, d.source));
    }
    if (d.move) moved_.push_back(found.path);
    json::value result = *found.node;
    active_.push_back(found.path);
    visit(result, path);  // the source's own directives
    active_.pop_back();
    if (own && !own->empty()) {
      if (!result.is_object()) {
        throw ConfigError(
            fmt::format("{}key '{}' merges its keys over '{}', which is {}, not a "
                        "mapping",
                        error_prefix(&origins_, path), path, d.source, describe(result)));
      }
      deep_merge(result.as_object(), *own);
    }
    return result;
  }

  json::object& cfg_;
  json::object frozen_;
  const ConfigOrigins& origins_;
  std::vector<std::string> moved_;
  std::vector<std::string> active_;
};

// ---- ??? ----

void collect_missing(const json::value& v, const std::string& path, std::vector<std::string>& out) {
  if (is_missing_marker(v)) {
    out.push_back(path);
  } else if (v.is_object()) {
    for (const auto& entry : v.get_object()) {
      collect_missing(entry.value(), child_path(path, entry.key()), out);
    }
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.get_array().size(); ++i) {
      collect_missing(v.get_array()[i], child_path(path, i), out);
    }
  }
}

// ---- interpolation ----

// Python's str() of a value, which is what OmegaConf splices into a longer string.
std::string to_text(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return std::string(v.get_string());
    case json::kind::double_:
      return python_float_repr(v.get_double());
    case json::kind::bool_:
      return v.get_bool() ? "True" : "False";
    case json::kind::null:
      return "None";
    default:
      return json::serialize(v);
  }
}

// Index of the '}' closing the '{' at `open`, or npos.
std::size_t closing_brace(std::string_view text, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < text.size(); ++i) {
    if (text[i] == '{') {
      ++depth;
    } else if (text[i] == '}' && --depth == 0) {
      return i;
    }
  }
  return std::string_view::npos;
}

class Interpolator {
 public:
  Interpolator(json::object& cfg, const ConfigOrigins& origins, const GetEnv& getenv)
      : cfg_(cfg), origins_(origins), getenv_(getenv) {}

  void run() {
    for (auto& entry : cfg_) walk(entry.value(), std::string(entry.key()));
  }

 private:
  // Only string leaves are ever assigned during resolution, so references to containers held
  // by an outer walk stay valid.
  void walk(json::value& v, const std::string& path) {
    if (done_.count(path)) return;
    if (v.is_object()) {
      for (auto& entry : v.as_object()) walk(entry.value(), child_path(path, entry.key()));
    } else if (v.is_array()) {
      for (std::size_t i = 0; i < v.get_array().size(); ++i) {
        walk(v.as_array()[i], child_path(path, i));
      }
    } else if (v.is_string() && v.get_string().find("${") != json::string::npos) {
      resolve_leaf(v, path);
    }
  }

  void resolve_leaf(json::value& slot, const std::string& path) {
    if (auto it = std::find(stack_.begin(), stack_.end(), path); it != stack_.end()) {
      std::string chain;
      for (; it != stack_.end(); ++it) chain += *it + " -> ";
      throw ConfigError(
          fmt::format("{}interpolation cycle: {}{}; set one of these keys to a plain "
                      "value",
                      error_prefix(&origins_, path), chain, path));
    }
    stack_.push_back(path);
    json::value result = interpolate(std::string(slot.get_string()), path);
    stack_.pop_back();
    slot = std::move(result);
    done_.insert(path);
  }

  json::value interpolate(std::string_view text, const std::string& path) {
    if (text.substr(0, 2) == "${" && closing_brace(text, 1) == text.size() - 1) {
      return evaluate(text.substr(2, text.size() - 3), path);  // whole value: keeps its type
    }
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
      if (text.substr(i, 3) == "\\${") {
        out += "${";
        i += 3;
      } else if (text.substr(i, 2) == "${") {
        std::size_t end = closing_brace(text, i + 1);
        if (end == std::string_view::npos) {
          throw ConfigError(fmt::format("{}key '{}' has an unterminated '${{' in '{}'",
                                        error_prefix(&origins_, path), path, text));
        }
        out += to_text(evaluate(text.substr(i + 2, end - i - 2), path));
        i = end + 1;
      } else {
        out += text[i++];
      }
    }
    return json::string(out);
  }

  json::value evaluate(std::string_view expr, const std::string& path) {
    std::string expanded;
    // Nested interpolations first: ${a.${b}}, ${oc.env:X,${y}}.
    if (expr.find("${") != std::string_view::npos) {
      expanded = to_text(interpolate(expr, path));
      expr = expanded;
    }
    expr = trim(expr);
    if (expr.substr(0, 7) == "oc.env:") return env(expr.substr(7), path);
    if (std::size_t colon = expr.find(':'); colon != std::string_view::npos) {
      std::string_view name = expr.substr(0, colon);
      std::string hint =
          name == "inherit_from" || name == "copy"
              ? fmt::format("${{{}:...}} only works as the whole value of a key", name)
              : "gym-cpp resolves ${a.b}, ${oc.env:VAR} and ${oc.env:VAR,default}";
      throw ConfigError(
          fmt::format("{}key '{}' uses the resolver '{}', which is not available "
                      "here; {}",
                      error_prefix(&origins_, path), path, name, hint));
    }
    if (expr.empty() || expr.front() == '.') {
      throw ConfigError(
          fmt::format("{}key '{}' has the interpolation ${{{}}}; only absolute "
                      "paths from the top of the config are supported",
                      error_prefix(&origins_, path), path, expr));
    }
    std::vector<std::string> parts = split_path(expr);
    Lookup found = lookup(cfg_, parts);
    if (!found.node) {
      throw ConfigError(fmt::format(
          "{}key '{}' refers to ${{{}}}, but '{}' is not set{}; set it "
          "with ++{}=<value>",
          error_prefix(&origins_, path), path, expr, expr, suggestion(found, parts), expr));
    }
    if (found.node->is_string()) {
      if (found.node->get_string().find("${") != json::string::npos && !done_.count(found.path)) {
        resolve_leaf(*found.node, found.path);
      }
    } else if (found.node->is_structured()) {
      stack_.push_back(found.path);  // a subtree that refers back to itself is a cycle too
      walk(*found.node, found.path);
      stack_.pop_back();
    }
    return *found.node;
  }

  json::value env(std::string_view args, const std::string& path) {
    std::size_t comma = args.find(',');
    std::string name(trim(args.substr(0, comma)));
    if (auto v = getenv_(name)) return json::string(*v);
    if (comma != std::string_view::npos) {
      std::string_view def = trim(args.substr(comma + 1));
      if (def == "null") return nullptr;
      if (def.size() >= 2 && (def.front() == '\'' || def.front() == '"') &&
          def.back() == def.front()) {
        def = def.substr(1, def.size() - 2);
      }
      return json::string(def);
    }
    throw ConfigError(
        fmt::format("{}key '{}' reads the environment variable {} "
                    "(${{oc.env:{}}}), which is not set; export {}=<value>, give a "
                    "default with ${{oc.env:{},<default>}}, or set the key with "
                    "++{}=<value>",
                    error_prefix(&origins_, path), path, name, name, name, name, path));
  }

  json::object& cfg_;
  const ConfigOrigins& origins_;
  const GetEnv& getenv_;
  std::vector<std::string> stack_;  // leaves being resolved, for cycle reports
  std::set<std::string> done_;
};

}  // namespace

void apply_directives(json::object& cfg, const ConfigOrigins& origins) {
  DirectiveResolver(cfg, origins).run();
}

void check_missing_values(const json::object& cfg, const ConfigOrigins& origins) {
  std::vector<std::string> missing;
  for (const auto& entry : cfg) collect_missing(entry.value(), std::string(entry.key()), missing);
  if (missing.empty()) return;
  if (missing.size() == 1) {
    throw ConfigError(fmt::format("{}key '{}' is missing (\?\?\?); set it with ++{}=<value>",
                                  error_prefix(&origins, missing[0]), missing[0], missing[0]));
  }
  std::string list;
  for (const auto& key : missing) {
    std::string origin = origins.find(key);
    list += fmt::format("\n  - {}{}", key, origin.empty() ? "" : " (from " + origin + ")");
  }
  throw ConfigError(
      fmt::format("config error: {} keys are missing (\?\?\?):{}\nSet each on the "
                  "command line (e.g. ++{}=<value>), in env.yaml, or in a config "
                  "file.",
                  missing.size(), list, missing[0]));
}

void resolve_interpolations(json::object& cfg, const ConfigOrigins& origins, const GetEnv& getenv) {
  Interpolator(cfg, origins, getenv).run();
}

}  // namespace gym::core
