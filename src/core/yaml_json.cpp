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
