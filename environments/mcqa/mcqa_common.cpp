#include "mcqa/mcqa_common.h"

#include "core/config.h"
#include "python_compat/errors.h"
#include "python_compat/json.h"
#include "python_compat/re.h"
#include "python_compat/str.h"
#include "servers/resources_server.h"

#include <boost/json.hpp>

#include <array>
#include <memory>

namespace gym::environments {
namespace json = boost::json;
using http::Schema;
using python_compat::py_collapse_whitespace;
using python_compat::py_isalpha;
using python_compat::py_len;
using python_compat::py_lower;
using python_compat::py_replace;
using python_compat::py_strip;
using python_compat::py_type_name;
using python_compat::py_upper;
using python_compat::PyRegex;

namespace {

constexpr std::array<std::string_view, 3> kRowModes = {"strict_single_letter_boxed",
                                                       "lenient_boxed", "lenient_answer_colon"};
constexpr std::string_view kConfigOnlyMode = "lenient_answer_colon_md";

}  // namespace

std::vector<http::SchemaField> mcqa_request_fields() {
  Schema option_entry = Schema::of(Schema::Kind::dict);
  option_entry.items = std::make_shared<const Schema>(Schema::of(Schema::Kind::string, true));
  return {
      {"uuid", Schema::of(Schema::Kind::string, true), false},
      {"options", Schema::list_of(option_entry, true), false},
      {"expected_answer", Schema::of(Schema::Kind::string, true), false},
      {"metadata", Schema::of(Schema::Kind::dict, true), false},
      {"grading_mode", Schema::literal_of({kRowModes.begin(), kRowModes.end()}), false},
      {"template_metadata", Schema::of(Schema::Kind::dict, true), false},
  };
}

std::optional<std::string> mcqa_config_grading_mode(const json::object& config,
                                                    std::string_view env) {
  const auto* v = config.if_contains("grading_mode");
  if (!v || v->is_null()) return std::nullopt;
  if (v->is_string()) {
    for (auto mode : kRowModes)
      if (v->get_string() == mode) return std::string(mode);
    if (v->get_string() == kConfigOnlyMode) return std::string(kConfigOnlyMode);
  }
  throw core::ConfigError(std::string(env) +
                          ": grading_mode must be null, strict_single_letter_boxed, "
                          "lenient_boxed, lenient_answer_colon or lenient_answer_colon_md");
}

const json::value& mcqa_field(const json::object& row, std::string_view key) {
  static const json::value null_value;
  const auto* v = row.if_contains(key);
  return v ? *v : null_value;
}

json::object mcqa_verify_answer(const json::object& row, const std::optional<std::string>& letter) {
  const json::value& expected = mcqa_field(row, "expected_answer");
  const std::string gold =
      expected.is_string() ? python_compat::py_upper(python_compat::py_strip(expected.get_string()))
                           : "";
  const bool correct = letter && !gold.empty() && *letter == gold;
  json::object out = servers::verify_response(row, correct ? 1.0 : 0.0);
  out["expected_answer"] = gold;
  out["extracted_answer"] = letter ? json::value(*letter) : json::value(nullptr);
  return out;
}

std::string mcqa_output_text(const json::array& output) {
  std::string text;
  for (const auto& v : output) {
    const auto* item = v.if_object();
    if (!item || !item->contains("type") || item->at("type") != "message") continue;
    const auto* content = item->if_contains("content");
    if (!content) continue;
    if (content->is_string()) {
      // Upstream iterates the string's characters and asks each for `.type`.
      if (!content->get_string().empty())
        throw python_compat::AttributeError("'str' object has no attribute 'type'");
      continue;
    }
    if (!content->is_array()) continue;
    for (const auto& p : content->get_array()) {
      const auto* part = p.if_object();
      if (!part || !part->contains("type") || part->at("type") != "output_text") continue;
      if (const auto* t = part->if_contains("text"); t && t->is_string()) text += t->get_string();
    }
  }
  return text;
}

std::vector<std::pair<std::string, const json::value*>> mcqa_option_pairs(
    const json::value& options) {
  std::vector<std::pair<std::string, const json::value*>> out;
  if (!options.is_array()) return out;
  for (const auto& entry : options.get_array())
    for (const auto& kv : entry.get_object()) out.emplace_back(kv.key(), &kv.value());
  return out;
}

McqaLetters mcqa_allowed_letters(const json::value& options) {
  McqaLetters letters;
  for (const auto& [key, value] : mcqa_option_pairs(options))
    if (py_len(key) == 1 && py_isalpha(key) && !value->is_null()) letters.insert(py_upper(key));
  return letters;
}

std::string mcqa_normalize_for_match(std::string_view s) {
  return py_collapse_whitespace(py_lower(s));
}

std::string mcqa_normalize_letters(std::string_view text) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 12> kMap{{
      {"أ", " A"},
      {"ب", " B"},
      {"ج", " C"},
      {"د", " D"},
      {"অ", " A"},
      {"ব", " B"},
      {"ড", " C"},
      {"ঢ", " D"},
      {"Ａ", " A"},
      {"Ｂ", " B"},
      {"Ｃ", " C"},
      {"Ｄ", " D"},
  }};
  std::string out(text);
  for (const auto& [from, to] : kMap) out = py_replace(out, from, to);
  return py_strip(out);
}

std::optional<std::string> mcqa_custom_regex(std::string_view text, const json::value& pattern,
                                             const json::value& options,
                                             const McqaLetters& allowed) {
  // re.findall looks the pattern up in its cache first (a list or dict cannot be hashed), then
  // refuses anything that is not a string.
  if (pattern.is_array() || pattern.is_object())
    throw python_compat::TypeError("unhashable type: '" + py_type_name(pattern) + "'");
  if (!pattern.is_string())
    throw python_compat::TypeError("first argument must be string or compiled pattern");
  std::optional<PyRegex> regex;
  try {
    regex.emplace(std::string_view(pattern.get_string()), PyRegex::kIgnoreCase);
  } catch (const python_compat::PyRegexError&) {
    return std::nullopt;  // re.error: the pattern yields nothing
  }
  auto matches = regex->finditer(text);
  if (matches.empty()) return std::nullopt;
  if (regex->group_count() > 1)
    throw python_compat::AttributeError("'tuple' object has no attribute 'strip'");
  std::string_view last = matches.back().group(regex->group_count() == 1 ? 1 : 0);
  std::string captured = py_upper(mcqa_normalize_letters(py_strip(last)));
  if (py_len(captured) == 1 && py_isalpha(captured)) return captured;
  std::string wanted = mcqa_normalize_for_match(captured);
  for (const auto& [key, value] : mcqa_option_pairs(options)) {
    if (value->is_null()) continue;
    std::string up = py_upper(key);
    if (allowed.contains(up) && mcqa_normalize_for_match(value->get_string()) == wanted) return up;
  }
  return std::nullopt;
}

}  // namespace gym::environments
