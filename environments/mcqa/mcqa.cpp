#include "mcqa/mcqa_metrics.h"

#include "core/config.h"
#include "python_compat/errors.h"
#include "python_compat/json.h"
#include "python_compat/latex.h"
#include "python_compat/re.h"
#include "python_compat/str.h"
#include "servers/resources_server.h"

#include <boost/json.hpp>

#include <array>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace gym::environments {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;
using http::Schema;
using python_compat::py_collapse_whitespace;
using python_compat::py_isalpha;
using python_compat::py_len;
using python_compat::py_lower;
using python_compat::py_replace;
using python_compat::py_strip;
using python_compat::py_strip_chars;
using python_compat::py_type_name;
using python_compat::py_upper;
using python_compat::PyRegex;
using python_compat::strip_latex_wrappers;

namespace {

constexpr std::string_view kStrict = "strict_single_letter_boxed";
constexpr std::string_view kLenientBoxed = "lenient_boxed";
constexpr std::string_view kAnswerColon = "lenient_answer_colon";
constexpr std::string_view kAnswerColonMd = "lenient_answer_colon_md";

using Letters = std::set<std::string>;

// response.output_text: every output_text part of every message item, concatenated.
std::string output_text(const json::array& output) {
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

// The entries of `options` as (key, value) pairs in order; null options give none.
std::vector<std::pair<std::string, const json::value*>> option_pairs(const json::value& options) {
  std::vector<std::pair<std::string, const json::value*>> out;
  if (!options.is_array()) return out;
  for (const auto& entry : options.get_array())
    for (const auto& kv : entry.get_object()) out.emplace_back(kv.key(), &kv.value());
  return out;
}

// Upper-cased single-letter keys whose value is not null.
Letters allowed_letters(const json::value& options) {
  Letters letters;
  for (const auto& [key, value] : option_pairs(options))
    if (py_len(key) == 1 && py_isalpha(key) && !value->is_null()) letters.insert(py_upper(key));
  return letters;
}

// " ".join(s.lower().split())
std::string normalize_for_match(std::string_view s) { return py_collapse_whitespace(py_lower(s)); }

// Arabic, Bengali and full-width letters become " A".." D", then strip.
std::string normalize_letters(std::string_view text) {
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

// Everything inside the last \boxed{...} (braces counted), or nullopt.
std::optional<std::string> boxed_inner(std::string_view text) {
  static constexpr std::string_view kMarker = "\\boxed{";
  auto start = text.rfind(kMarker);
  if (start == std::string_view::npos) return std::nullopt;
  int depth = 1;
  for (std::size_t i = start + kMarker.size(); i < text.size(); ++i) {
    if (text[i] == '{') {
      ++depth;
    } else if (text[i] == '}' && --depth == 0) {
      return std::string(text.substr(start + kMarker.size(), i - start - kMarker.size()));
    }
  }
  return std::nullopt;
}

std::optional<std::string> strict_boxed(std::string_view text, const Letters& allowed) {
  static const PyRegex letter_only(R"(^[^A-Za-z]*([A-Z])[^A-Za-z]*$)");
  static const PyRegex letter_label(R"(^\s*([A-Z])\s*[:).\-])");
  auto inner = boxed_inner(text);
  if (!inner) return std::nullopt;
  std::string content = strip_latex_wrappers(py_strip(*inner));
  std::optional<std::string> letter;
  if (auto m = letter_only.match(content)) {
    letter = py_upper(m->group(1));
  } else if (auto m2 = letter_label.match(content)) {
    letter = py_upper(m2->group(1));
  }
  if (!letter || !allowed.contains(*letter)) return std::nullopt;
  return letter;
}

// lenient_boxed's fallback: exactly one option text contained in the boxed content.
std::optional<std::string> match_option_text(std::string_view text, const json::value& options,
                                             const Letters& allowed) {
  auto inner = boxed_inner(text);
  if (!inner) return std::nullopt;
  std::string stripped = py_strip(*inner);
  std::array<std::string, 2> candidates{normalize_for_match(stripped),
                                        normalize_for_match(strip_latex_wrappers(stripped))};
  std::vector<std::pair<std::string, std::string>> normalized;
  for (const auto& [key, value] : option_pairs(options)) {
    if (value->is_null() || py_len(key) != 1) continue;
    std::string letter = py_upper(key);
    if (allowed.contains(letter))
      normalized.emplace_back(letter, normalize_for_match(value->get_string()));
  }
  Letters matched;
  for (const auto& candidate : candidates)
    for (const auto& [letter, option] : normalized)
      if (!option.empty() && candidate.find(option) != std::string::npos) matched.insert(letter);
  if (matched.size() == 1) return *matched.begin();
  return std::nullopt;
}

std::optional<std::string> answer_colon(std::string_view text, const json::value& options,
                                        const Letters& allowed) {
  static const PyRegex pattern(R"((?i)answer\s*:\s*(.+))");
  auto m = pattern.search(text);
  if (!m) return std::nullopt;
  std::string candidate = py_strip(strip_latex_wrappers(std::string(m->group(1))));
  if (py_len(candidate) == 1 && py_isalpha(candidate)) {
    std::string up = py_upper(candidate);
    if (allowed.contains(up)) return up;
  }
  std::string wanted = normalize_for_match(candidate);
  for (const auto& [key, value] : option_pairs(options)) {
    std::string up = py_upper(key);
    if (!allowed.contains(up)) continue;
    if (value->is_null())
      throw python_compat::AttributeError("'NoneType' object has no attribute 'lower'");
    if (normalize_for_match(value->get_string()) == wanted) return up;
  }
  return std::nullopt;
}

// Two different allowed letters separated only by a list separator: several choices.
bool ambiguous_choice_list(std::string_view text, const Letters& allowed) {
  static const PyRegex letter(R"((?<![A-Za-z])([A-Za-z])(?![A-Za-z]))");
  static const PyRegex separator(R"((?:\s*[/|&,;]\s*|\s+(?:or|and)\s+|\s+))", PyRegex::kIgnoreCase);
  struct Found {
    std::string letter;
    std::size_t start, end;
  };
  std::vector<Found> found;
  for (const auto& m : letter.finditer(text)) {
    std::string up = py_upper(m.group(1));
    if (allowed.contains(up)) found.push_back({up, m.start(1), m.end(1)});
  }
  for (std::size_t k = 0; k + 1 < found.size(); ++k) {
    const auto& l = found[k];
    const auto& r = found[k + 1];
    if (l.letter != r.letter && separator.fullmatch(text.substr(l.end, r.start - l.end)))
      return true;
  }
  return false;
}

std::optional<std::string> choice_letter(std::string_view payload, const Letters& allowed) {
  static const PyRegex leading(R"(^([a-zA-Z])(?![a-zA-Z0-9]))");
  static const PyRegex last_standalone(R"(\b[A-Z]\b(?!.*\b[A-Z]\b))", PyRegex::kDotAll);
  std::string candidate = py_strip_chars(py_strip(normalize_letters(payload)), "*_` \t\n\r.,;:");
  if (ambiguous_choice_list(candidate, allowed)) return std::nullopt;
  std::string letter;
  if (py_len(candidate) == 1) {
    letter = candidate;
  } else if (auto m = leading.match(candidate)) {
    letter = m->group(1);
  } else if (auto m2 = last_standalone.search(candidate)) {
    letter = m2->group(0);
  }
  if (letter.empty()) return std::nullopt;
  std::string up = py_upper(letter);
  if (allowed.contains(up)) return up;
  return std::nullopt;
}

std::optional<std::string> answer_colon_md(std::string_view text, const Letters& allowed) {
  static const PyRegex pattern(R"((?im)[*_]{0,2}Answer[*_]{0,2}\s*:[*_\s]{0,2}(.+))");
  auto payloads = pattern.findall(text);
  for (auto it = payloads.rbegin(); it != payloads.rend(); ++it)
    if (auto letter = choice_letter(*it, allowed)) return letter;
  return std::nullopt;
}

// One template_metadata.output_regex pattern: the last match, trusted when it is one letter.
std::optional<std::string> custom_regex(std::string_view text, const json::value& pattern,
                                        const json::value& options, const Letters& allowed) {
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
  std::string captured = py_upper(normalize_letters(py_strip(last)));
  if (py_len(captured) == 1 && py_isalpha(captured)) return captured;
  std::string wanted = normalize_for_match(captured);
  for (const auto& [key, value] : option_pairs(options)) {
    if (value->is_null()) continue;
    std::string up = py_upper(key);
    if (allowed.contains(up) && normalize_for_match(value->get_string()) == wanted) return up;
  }
  return std::nullopt;
}

std::optional<std::string> custom_regexes(std::string_view text, const json::value& patterns,
                                          const json::value& options, const Letters& allowed) {
  if (patterns.is_string()) return custom_regex(text, patterns, options, allowed);
  if (patterns.is_array()) {
    for (const auto& p : patterns.get_array())
      if (auto letter = custom_regex(text, p, options, allowed)) return letter;
    return std::nullopt;
  }
  if (patterns.is_object()) {  // iterating a dict walks its keys
    for (const auto& kv : patterns.get_object())
      if (auto letter = custom_regex(text, json::value(kv.key()), options, allowed)) return letter;
    return std::nullopt;
  }
  throw python_compat::TypeError("'" + py_type_name(patterns) + "' object is not iterable");
}

const json::value& field_or_null(const json::object& row, std::string_view key) {
  static const json::value null_value;
  const auto* v = row.if_contains(key);
  return v ? *v : null_value;
}

json::object verify(const json::object& row, const std::optional<std::string>& config_mode) {
  const json::value& options = field_or_null(row, "options");
  const json::value& expected = field_or_null(row, "expected_answer");
  std::string gold = expected.is_string() ? py_upper(py_strip(expected.get_string())) : "";
  Letters allowed = allowed_letters(options);
  std::string mode = config_mode ? *config_mode
                     : row.contains("grading_mode")
                         ? std::string(row.at("grading_mode").get_string())
                         : std::string(kStrict);

  std::optional<std::string> pred;
  std::string text = py_strip(output_text(row.at("response").at("output").get_array()));
  if (!text.empty()) {
    const json::value& metadata = field_or_null(row, "template_metadata");
    if (metadata.is_object() && metadata.get_object().contains("output_regex"))
      pred = custom_regexes(text, metadata.at("output_regex"), options, allowed);
    if (!pred) {
      if (mode == kStrict) {
        pred = strict_boxed(text, allowed);
      } else if (mode == kLenientBoxed) {
        pred = strict_boxed(text, allowed);
        if (!pred) pred = match_option_text(text, options, allowed);
      } else if (mode == kAnswerColon) {
        pred = answer_colon(text, options, allowed);
      } else if (mode == kAnswerColonMd) {
        pred = answer_colon_md(text, allowed);
      }
    }
  }
  bool correct = pred && !gold.empty() && *pred == gold;
  json::object out = servers::verify_response(row, correct ? 1.0 : 0.0);
  out["expected_answer"] = gold;
  out["extracted_answer"] = pred ? json::value(*pred) : json::value(nullptr);
  return out;
}

// The instance's `grading_mode` (null: each row's own), checked at startup.
std::optional<std::string> config_grading_mode(const json::object& config) {
  const auto* v = config.if_contains("grading_mode");
  if (!v || v->is_null()) return std::nullopt;
  for (auto mode : {kStrict, kLenientBoxed, kAnswerColon, kAnswerColonMd})
    if (v->is_string() && v->get_string() == mode) return std::string(mode);
  throw core::ConfigError(
      "mcqa: grading_mode must be null, strict_single_letter_boxed, lenient_boxed, "
      "lenient_answer_colon or lenient_answer_colon_md");
}

}  // namespace

// MCQAResourcesServer (environments.md 5): multiple-choice answers; the letter is extracted
// from the response text by the row's (or the config's) grading mode.
// Registered by the generated builtin_environments.cpp (environments/CMakeLists.txt).
servers::Environment mcqa_environment() {
  return {
      "mcqa",
      "MCQAResourcesServer",
      [](servers::ServerContext& ctx, http::Router&) -> servers::VerifyRoute {
        auto mode = config_grading_mode(ctx.instance.config);
        Schema option_entry = Schema::of(Schema::Kind::dict);
        option_entry.items = std::make_shared<const Schema>(Schema::of(Schema::Kind::string, true));
        auto verify_schema = servers::verify_request_schema({
            {"uuid", Schema::of(Schema::Kind::string, true), false},
            {"options", Schema::list_of(option_entry, true), false},
            {"expected_answer", Schema::of(Schema::Kind::string, true), false},
            {"metadata", Schema::of(Schema::Kind::dict, true), false},
            {"grading_mode",
             Schema::literal_of(
                 {std::string(kStrict), std::string(kLenientBoxed), std::string(kAnswerColon)}),
             false},
            {"template_metadata", Schema::of(Schema::Kind::dict, true), false},
        });
        return {[mode](Request&, json::value& body) -> asio::awaitable<Response> {
                  co_return Response::json(verify(body.get_object(), mode));
                },
                verify_schema};
      },
      "stateless",
      mcqa_aggregate_hooks(),
  };
}

}  // namespace gym::environments
