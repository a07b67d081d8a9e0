#include "core/yaml_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <istream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <streambuf>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>
#include <boost/json.hpp>

#include "core/config_error.h"

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

std::string location(const YAML::Mark& mark) {
  if (mark.is_null()) return "";
  return fmt::format(" at line {}, column {}", mark.line + 1, mark.column + 1);
}

// One node of a document as yaml-cpp's parser reports it. An alias is the very node of its
// anchor, shared (and, for an alias inside its own anchor, a cycle), as in a YAML::Node tree.
struct YamlNode {
  YAML::NodeType::value type = YAML::NodeType::Null;
  std::string tag;
  std::string scalar;
  YAML::Mark mark;
  std::vector<const YamlNode*> children;  // a sequence's items; a mapping's keys and values
};

// Reads a YAML stream in one pass of yaml-cpp's event parser: the nodes of its first document
// the way YAML::Load builds them (same nodes, tags, marks, order and shared aliases), and how
// many documents follow, which a config must not have. Before, the stream was parsed twice (to
// count documents, then by YAML::Load), and yaml-cpp's own nodes cost more to build and walk.
class DocumentReader : public YAML::EventHandler {
 public:
  // The number of documents; the root of the first is root().
  std::size_t read(std::string_view text, std::string_view origin) {
    ViewBuffer buffer(text);
    std::istream in(&buffer);
    YAML::Parser parser(in);
    if (!parser.HandleNextDocument(*this)) return 0;
    // Each document must start further on than the one before: Debian's yaml-cpp 0.7.0
    // answers a token that cannot start a node (a lone `,`) with an empty document without
    // consuming it, so reading on would collect empty documents forever (yaml-cpp issue 1040).
    std::size_t documents = 1;
    counting_ = true;
    int previous_start = start_.pos;
    while (parser.HandleNextDocument(*this)) {
      if (start_.pos <= previous_start) {
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

  const YamlNode* root() const { return root_; }

  void OnDocumentStart(const YAML::Mark& mark) override { start_ = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (counting_) return;
    add(begin(mark, anchor, YAML::NodeType::Null));
  }
  void OnAlias(const YAML::Mark&, YAML::anchor_t anchor) override {
    if (counting_) return;
    // The parser only reports aliases of anchors it has seen.
    add(anchors_.at(anchor));
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (counting_) return;
    YamlNode* node = begin(mark, anchor, YAML::NodeType::Scalar);
    node->tag = tag;
    node->scalar = value;
    add(node);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    if (counting_) return;
    open(mark, tag, anchor, YAML::NodeType::Sequence);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    if (counting_) return;
    open(mark, tag, anchor, YAML::NodeType::Map);
  }
  void OnMapEnd() override { close(); }

 private:
  // The text as a stream without a copy of it.
  struct ViewBuffer : std::streambuf {
    explicit ViewBuffer(std::string_view text) {
      char* begin = const_cast<char*>(text.data());  // only read
      setg(begin, begin, begin + text.size());
    }
  };

  // A new node; an anchor names it from here on, its own children included.
  YamlNode* begin(const YAML::Mark& mark, YAML::anchor_t anchor, YAML::NodeType::value type) {
    YamlNode& node = nodes_.emplace_back();
    node.type = type;
    node.mark = mark;
    if (anchor != YAML::NullAnchor) {
      if (anchors_.size() <= anchor) anchors_.resize(anchor + 1, nullptr);
      anchors_[anchor] = &node;
    }
    return &node;
  }

  // A finished node goes into the collection it is in (keys and values alternate in a mapping),
  // or is the root.
  void add(const YamlNode* node) {
    if (open_.empty()) {
      root_ = node;
    } else {
      open_.back()->children.push_back(node);
    }
  }

  void open(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
            YAML::NodeType::value type) {
    YamlNode* node = begin(mark, anchor, type);
    node->tag = tag;
    open_.push_back(node);
  }

  void close() {
    if (counting_) return;
    const YamlNode* node = open_.back();
    open_.pop_back();
    add(node);
  }

  std::deque<YamlNode> nodes_;  // stable addresses
  std::vector<const YamlNode*> anchors_;
  std::vector<YamlNode*> open_;
  const YamlNode* root_ = nullptr;
  YAML::Mark start_;
  bool counting_ = false;  // past the first document: only its start matters
};

// The conversion of one document's nodes. An anchor's node is shared between its aliases, but
// the JSON tree copies it for each, so nested aliases can expand exponentially (an "alias
// bomb"): `values_left` bounds the values created, with an error instead of the memory.
class Converter {
 public:
  Converter(std::string_view origin, std::size_t max_values)
      : origin_(origin), values_left_(max_values) {}

  json::value convert(const YamlNode& node) {
    if (values_left_ == 0) {
      throw ConfigError(fmt::format(
          "config error in {}{}: the document expands to more than {} values; its aliases "
          "(*name) repeat anchored (&name) content too often. Write the repeated parts out or "
          "reference fewer nested aliases",
          origin_, location(node.mark), kMaxYamlAliasValues));
    }
    --values_left_;
    if (depth_ == kMaxYamlDepth) {
      throw ConfigError(fmt::format(
          "config error in {}{}: values nest more than {} levels deep; does an alias (*name) "
          "refer to the anchor (&name) it is inside of?",
          origin_, location(node.mark), kMaxYamlDepth));
    }
    ++depth_;
    json::value out = convert_node(node);
    --depth_;
    return out;
  }

 private:
  json::value convert_node(const YamlNode& node) {
    switch (node.type) {
      case YAML::NodeType::Map:
        return convert_map(node);
      case YAML::NodeType::Sequence: {
        json::array out;
        for (const YamlNode* item : node.children) out.push_back(convert(*item));
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

  static bool is_merge_key(const YamlNode& key) {
    return key.type == YAML::NodeType::Scalar && key.tag == "?" && key.scalar == "<<";
  }

  json::value convert_map(const YamlNode& node) {
    const auto& entries = node.children;
    json::object out;
    for (std::size_t i = 0; i + 1 < entries.size(); i += 2) {
      if (is_merge_key(*entries[i])) merge_defaults(out, *entries[i + 1]);
    }
    for (std::size_t i = 0; i + 1 < entries.size(); i += 2) {
      if (!is_merge_key(*entries[i])) out[key_text(*entries[i])] = convert(*entries[i + 1]);
    }
    return out;
  }

  json::value convert_scalar(const YamlNode& node) const {
    // yaml-cpp tags quoted and block scalars "!" and plain ones "?".
    if (node.tag == "!" || node.tag == "tag:yaml.org,2002:str") {
      return json::string(node.scalar);
    }
    try {
      return yaml_plain_scalar(node.scalar);
    } catch (const std::out_of_range&) {
      throw ConfigError(
          fmt::format("config error in {}{}: the number {} does not fit in 64 "
                      "bits; quote it to keep it as text",
                      origin_, location(node.mark), node.scalar));
    }
  }

  std::string key_text(const YamlNode& key) const {
    if (key.type == YAML::NodeType::Scalar) return key.scalar;
    throw ConfigError(fmt::format(
        "config error in {}{}: mapping keys must be plain text, not {}", origin_,
        location(key.mark), key.type == YAML::NodeType::Null ? "empty" : "a list or mapping"));
  }

  // `<<: *base` copies the keys of the referenced mapping(s) as defaults, as PyYAML does: with a
  // list, an earlier mapping wins over a later one, and explicit keys win over all of them.
  void merge_defaults(json::object& out, const YamlNode& value) {
    std::vector<const YamlNode*> sources;
    if (value.type == YAML::NodeType::Map) {
      sources.push_back(&value);
    } else if (value.type == YAML::NodeType::Sequence) {
      sources.assign(value.children.rbegin(), value.children.rend());
    }
    if (sources.empty()) merge_error(value);
    for (const YamlNode* source : sources) {
      if (source->type != YAML::NodeType::Map) merge_error(value);
      json::value merged = convert(*source);
      for (auto& [k, v] : merged.as_object()) out[k] = std::move(v);
    }
  }

  [[noreturn]] void merge_error(const YamlNode& value) const {
    throw ConfigError(
        fmt::format("config error in {}{}: a `<<` merge key needs a mapping or a "
                    "list of mappings",
                    origin_, location(value.mark)));
  }

  std::string_view origin_;
  std::size_t values_left_;
  std::size_t depth_ = 0;
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
  if (is_yaml_int(text)) return construct_int(text);
  if (is_yaml_float(text)) return construct_float(text);
  return json::string(text);
}

json::value parse_yaml(std::string_view text, std::string_view origin) {
  if (text.size() > kMaxYamlBytes) throw too_large(origin);
  DocumentReader reader;
  std::size_t documents = 0;
  try {
    documents = reader.read(text, origin);
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
  if (documents == 0 || !reader.root()) return nullptr;
  // A document has at most about one value per byte of its text; the rest comes from aliases.
  return Converter(origin, text.size() + kMaxYamlAliasValues).convert(*reader.root());
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
