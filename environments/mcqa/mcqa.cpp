#include "mcqa/mcqa_common.h"
#include "mcqa/mcqa_metrics.h"

#include "python_compat/errors.h"
#include "python_compat/json.h"
#include "python_compat/latex.h"
#include "python_compat/re.h"
#include "python_compat/str.h"
#include "servers/resources_server.h"

#include <boost/json.hpp>

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gym::environments {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;
using python_compat::py_isalpha;
using python_compat::py_len;
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

using Letters = McqaLetters;

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
  std::array<std::string, 2> candidates{mcqa_normalize_for_match(stripped),
                                        mcqa_normalize_for_match(strip_latex_wrappers(stripped))};
  std::vector<std::pair<std::string, std::string>> normalized;
  for (const auto& [key, value] : mcqa_option_pairs(options)) {
    if (value->is_null() || py_len(key) != 1) continue;
    std::string letter = py_upper(key);
    if (allowed.contains(letter))
      normalized.emplace_back(letter, mcqa_normalize_for_match(value->get_string()));
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
  std::string wanted = mcqa_normalize_for_match(candidate);
  for (const auto& [key, value] : mcqa_option_pairs(options)) {
    std::string up = py_upper(key);
    if (!allowed.contains(up)) continue;
    if (value->is_null())
      throw python_compat::AttributeError("'NoneType' object has no attribute 'lower'");
    if (mcqa_normalize_for_match(value->get_string()) == wanted) return up;
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
  std::string candidate =
      py_strip_chars(py_strip(mcqa_normalize_letters(payload)), "*_` \t\n\r.,;:");
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

std::optional<std::string> custom_regexes(std::string_view text, const json::value& patterns,
                                          const json::value& options, const Letters& allowed) {
  if (patterns.is_string()) return mcqa_custom_regex(text, patterns, options, allowed);
  if (patterns.is_array()) {
    for (const auto& p : patterns.get_array())
      if (auto letter = mcqa_custom_regex(text, p, options, allowed)) return letter;
    return std::nullopt;
  }
  if (patterns.is_object()) {  // iterating a dict walks its keys
    for (const auto& kv : patterns.get_object())
      if (auto letter = mcqa_custom_regex(text, json::value(kv.key()), options, allowed))
        return letter;
    return std::nullopt;
  }
  throw python_compat::TypeError("'" + py_type_name(patterns) + "' object is not iterable");
}

json::object verify(const json::object& row, const std::optional<std::string>& config_mode) {
  const json::value& options = mcqa_field(row, "options");
  Letters allowed = mcqa_allowed_letters(options);
  std::string mode = config_mode ? *config_mode
                     : row.contains("grading_mode")
                         ? std::string(row.at("grading_mode").get_string())
                         : std::string(kStrict);

  std::optional<std::string> pred;
  std::string text = py_strip(mcqa_output_text(row.at("response").at("output").get_array()));
  if (!text.empty()) {
    const json::value& metadata = mcqa_field(row, "template_metadata");
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
  return mcqa_verify_answer(row, pred);
}

}  // namespace

// MCQAResourcesServer (README.md here): multiple-choice answers; the letter is extracted from the
// response text by the row's (or the config's) grading mode.
// Registered by the generated builtin_environments.cpp (environments/CMakeLists.txt).
servers::Environment mcqa_environment() {
  return {
      "mcqa",
      "MCQAResourcesServer",
      [](servers::ServerContext& ctx, http::Router&) -> servers::VerifyRoute {
        auto mode = mcqa_config_grading_mode(ctx.instance.config, "mcqa");
        auto verify_schema = servers::verify_request_schema(mcqa_request_fields());
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
