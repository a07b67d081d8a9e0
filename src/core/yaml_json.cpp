#include "core/yaml_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>
#include <boost/json.hpp>

#include "core/config.h"

namespace gym::core {
namespace json = boost::json;

namespace {

// PyYAML's int resolver (YAML 1.1): binary, leading-zero octal, decimal, hex, base 60.
const std::regex kIntPattern(
    R"([-+]?(0b[01_]+|0[0-7_]+|0|[1-9][0-9_]*|0x[0-9a-fA-F_]+|[1-9][0-9_]*(:[0-5]?[0-9])+))");
// OmegaConf's float resolver, which also accepts "1e3" and "1e-3" (PyYAML alone needs a dot).
const std::regex kFloatPattern(
    R"([-+]?([0-9][0-9_]*\.[0-9_]*([eE][-+]?[0-9]+)?|[0-9][0-9_]*[eE][-+]?[0-9]+)"
    R"(|[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*|\.(inf|Inf|INF)))"
    R"(|\.[0-9][0-9_]*([eE][-+][0-9]+)?|\.(nan|NaN|NAN))");

bool full_match(std::string_view s, const std::regex& re) {
  return std::regex_match(s.begin(), s.end(), re);
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

std::string location(const YAML::Mark& mark) {
  if (mark.is_null()) return "";
  return fmt::format(" at line {}, column {}", mark.line + 1, mark.column + 1);
}

// The conversion of one document's nodes. yaml-cpp shares the node of an anchor between its
// aliases, but the JSON tree copies it for each, so nested aliases can expand exponentially (an
// "alias bomb"): `values_left` bounds the values created, with an error instead of the memory.
class Converter {
 public:
  Converter(std::string_view origin, std::size_t max_values)
      : origin_(origin), values_left_(max_values) {}

  json::value convert(const YAML::Node& node) {
    if (values_left_ == 0) {
      throw ConfigError(fmt::format(
          "config error in {}{}: the document expands to more than {} values; its aliases "
          "(*name) repeat anchored (&name) content too often. Write the repeated parts out or "
          "reference fewer nested aliases",
          origin_, location(node.Mark()), kMaxYamlAliasValues));
    }
    --values_left_;
    if (depth_ == kMaxYamlDepth) {
      throw ConfigError(fmt::format(
          "config error in {}{}: values nest more than {} levels deep; does an alias (*name) "
          "refer to the anchor (&name) it is inside of?",
          origin_, location(node.Mark()), kMaxYamlDepth));
    }
    ++depth_;
    json::value out = convert_node(node);
    --depth_;
    return out;
  }

 private:
  json::value convert_node(const YAML::Node& node) {
    switch (node.Type()) {
      case YAML::NodeType::Map:
        return convert_map(node);
      case YAML::NodeType::Sequence: {
        json::array out;
        for (const auto& item : node) out.push_back(convert(item));
        return out;
      }
      case YAML::NodeType::Scalar:
        return convert_scalar(node);
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        break;
    }
    return nullptr;
  }

  static bool is_merge_key(const YAML::Node& key) {
    return key.IsScalar() && key.Tag() == "?" && key.Scalar() == "<<";
  }

  json::value convert_map(const YAML::Node& node) {
    json::object out;
    for (const auto& entry : node) {
      if (is_merge_key(entry.first)) merge_defaults(out, entry.second);
    }
    for (const auto& entry : node) {
      if (!is_merge_key(entry.first)) out[key_text(entry.first)] = convert(entry.second);
    }
    return out;
  }

  json::value convert_scalar(const YAML::Node& node) const {
    // yaml-cpp tags quoted and block scalars "!" and plain ones "?".
    if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") {
      return json::string(node.Scalar());
    }
    try {
      return yaml_plain_scalar(node.Scalar());
    } catch (const std::out_of_range&) {
      throw ConfigError(
          fmt::format("config error in {}{}: the number {} does not fit in 64 "
                      "bits; quote it to keep it as text",
                      origin_, location(node.Mark()), node.Scalar()));
    }
  }

  std::string key_text(const YAML::Node& key) const {
    if (key.IsScalar()) return key.Scalar();
    throw ConfigError(fmt::format("config error in {}{}: mapping keys must be plain text, not {}",
                                  origin_, location(key.Mark()),
                                  key.IsNull() ? "empty" : "a list or mapping"));
  }

  // `<<: *base` copies the keys of the referenced mapping(s) as defaults, as PyYAML does: with a
  // list, an earlier mapping wins over a later one, and explicit keys win over all of them.
  void merge_defaults(json::object& out, const YAML::Node& value) {
    std::vector<YAML::Node> sources;
    if (value.IsMap()) {
      sources.push_back(value);
    } else if (value.IsSequence()) {
      for (const auto& item : value) sources.insert(sources.begin(), item);
    }
    if (sources.empty()) merge_error(value);
    for (const auto& source : sources) {
      if (!source.IsMap()) merge_error(value);
      json::value merged = convert(source);
      for (auto& [k, v] : merged.as_object()) out[k] = std::move(v);
    }
  }

  [[noreturn]] void merge_error(const YAML::Node& value) const {
    throw ConfigError(
        fmt::format("config error in {}{}: a `<<` merge key needs a mapping or a "
                    "list of mappings",
                    origin_, location(value.Mark())));
  }

  std::string_view origin_;
  std::size_t values_left_;
  std::size_t depth_ = 0;
};

// Counts the documents of a YAML stream through yaml-cpp's event parser, which builds nothing.
// Each document must start further on than the one before: Debian's yaml-cpp 0.7.0 answers a
// token that cannot start a node (a lone `,`) with an empty document without consuming it, so
// YAML::LoadAll would collect empty documents forever (yaml-cpp issue 1040).
class DocumentCounter : public YAML::EventHandler {
 public:
  std::size_t count(const std::string& text, std::string_view origin) {
    std::istringstream in(text);
    YAML::Parser parser(in);
    std::size_t documents = 0;
    std::optional<int> previous_start;
    while (parser.HandleNextDocument(*this)) {
      if (previous_start && start_.pos <= *previous_start) {
        const char found = start_.pos >= 0 && static_cast<std::size_t>(start_.pos) < text.size()
                               ? text[static_cast<std::size_t>(start_.pos)]
                               : '?';
        throw ConfigError(fmt::format(
            "config error in {}: YAML syntax error{}: '{}' cannot start a value here; quote the "
            "text if it is meant as a string",
            origin, location(start_), found));
      }
      previous_start = start_.pos;
      ++documents;
    }
    return documents;
  }

  void OnDocumentStart(const YAML::Mark& mark) override { start_ = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  YAML::Mark start_;
};

void emit(YAML::Emitter& out, const json::value& v);

void emit_string(YAML::Emitter& out, std::string_view s) {
  // Quote whatever a reader would type as something other than this very string.
  bool quote = s == "<<";
  try {
    quote = quote || !yaml_plain_scalar(s).is_string();
  } catch (const std::out_of_range&) {
    quote = true;
  }
  if (quote) out << YAML::DoubleQuoted;
  out << std::string(s);
}

void emit(YAML::Emitter& out, const json::value& v) {
  switch (v.kind()) {
    case json::kind::object:
      if (v.get_object().empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      out << YAML::BeginMap;
      for (const auto& [key, value] : v.get_object()) {
        out << YAML::Key;
        emit_string(out, key);
        out << YAML::Value;
        emit(out, value);
      }
      out << YAML::EndMap;
      return;
    case json::kind::array:
      if (v.get_array().empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      out << YAML::BeginSeq;
      for (const auto& item : v.get_array()) emit(out, item);
      out << YAML::EndSeq;
      return;
    case json::kind::string:
      emit_string(out, v.get_string());
      return;
    case json::kind::int64:
      out << v.get_int64();
      return;
    case json::kind::uint64:
      out << v.get_uint64();
      return;
    case json::kind::double_: {
      double d = v.get_double();
      if (std::isnan(d)) {
        out << ".nan";
      } else if (std::isinf(d)) {
        out << (d < 0 ? "-.inf" : ".inf");
      } else {
        out << python_float_repr(d);
      }
      return;
    }
    case json::kind::bool_:
      out << v.get_bool();
      return;
    case json::kind::null:
      out << YAML::Null;
      return;
  }
}

ConfigError too_large(std::string_view origin) {
  return ConfigError(
      fmt::format("config error in {}: more than {} MiB of YAML, the most a config may hold; point "
                  "--config and config_paths at YAML config files, not at data files or devices",
                  origin, kMaxYamlBytes >> 20));
}

}  // namespace

json::value yaml_plain_scalar(std::string_view text) {
  if (is_one_of(text, {"", "~", "null", "Null", "NULL"})) return nullptr;
  if (is_one_of(text, {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})) return true;
  if (is_one_of(text, {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})) {
    return false;
  }
  if (full_match(text, kIntPattern)) return construct_int(text);
  if (full_match(text, kFloatPattern)) return construct_float(text);
  return json::string(text);
}

json::value parse_yaml(std::string_view text, std::string_view origin) {
  if (text.size() > kMaxYamlBytes) throw too_large(origin);
  const std::string owned(text);
  std::size_t documents = 0;
  YAML::Node root;
  try {
    documents = DocumentCounter().count(owned, origin);
    if (documents == 1) root = YAML::Load(owned);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("config error in {}: YAML syntax error{}: {}", origin,
                                  location(e.mark), e.msg));
  }
  if (documents > 1) {
    throw ConfigError(
        fmt::format("config error in {}: found {} YAML documents (separated by "
                    "---); a config holds exactly one",
                    origin, documents));
  }
  if (documents == 0) return nullptr;
  // A document has at most about one value per byte of its text; the rest comes from aliases.
  return Converter(origin, text.size() + kMaxYamlAliasValues).convert(root);
}

json::value load_yaml_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw ConfigError(fmt::format("config error: config file '{}' does not exist", path));
  }
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError(fmt::format("config error: '{}' is a directory, not a YAML file", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("config error: cannot read config file '{}'", path));
  // Read one byte past the limit, never more: a device such as /dev/zero has no end.
  std::string text(kMaxYamlBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (in.bad()) throw ConfigError(fmt::format("config error: cannot read config file '{}'", path));
  if (text.size() > kMaxYamlBytes) throw too_large(path);
  return parse_yaml(text, path);
}

std::string to_yaml(const json::value& v) {
  YAML::Emitter out;
  emit(out, v);
  if (!out.good()) throw std::runtime_error("to_yaml: " + out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

}  // namespace gym::core
