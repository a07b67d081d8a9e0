#include "bunsenbench_chemistry_mcq/bunsen_extract.h"

#include "python_compat/html.h"
#include "python_compat/re.h"
#include "python_compat/str.h"
#include "python_compat/utf8.h"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <tuple>
#include <utility>

namespace gym::environments {
namespace json = boost::json;
using python_compat::append_utf8;
using python_compat::next_code_point;
using python_compat::py_collapse_whitespace;
using python_compat::py_html_unescape;
using python_compat::py_isalpha;
using python_compat::py_len;
using python_compat::py_lower;
using python_compat::py_nfkc;
using python_compat::py_splitlines;
using python_compat::py_strip;
using python_compat::py_strip_chars;
using python_compat::py_unicode_category;
using python_compat::py_upper;
using python_compat::PyMatch;
using python_compat::PyRegex;

namespace {

constexpr std::string_view kEdgeChars = " \t\r\n`*_\"'";

// Upstream's SUBSCRIPT_TRANSLATION (applied after NFKC, so several entries never fire).
constexpr std::array<std::pair<char32_t, char>, 40> kChemistryFolds{{
    {U'\x2080', '0'}, {U'\x2081', '1'}, {U'\x2082', '2'}, {U'\x2083', '3'}, {U'\x2084', '4'},
    {U'\x2085', '5'}, {U'\x2086', '6'}, {U'\x2087', '7'}, {U'\x2088', '8'}, {U'\x2089', '9'},
    {U'\x2070', '0'}, {U'\x00B9', '1'}, {U'\x00B2', '2'}, {U'\x00B3', '3'}, {U'\x2074', '4'},
    {U'\x2075', '5'}, {U'\x2076', '6'}, {U'\x2077', '7'}, {U'\x2078', '8'}, {U'\x2079', '9'},
    {U'\x207A', '+'}, {U'\x207B', '-'}, {U'\x208A', '+'}, {U'\x208B', '-'}, {U'\xFF0B', '+'},
    {U'\x2212', '-'}, {U'\x2013', '-'}, {U'\x2014', '-'}, {U'\x2012', '-'}, {U'\x2011', '-'},
    {U'\x00D7', 'x'}, {U'\x2715', 'x'}, {U'\x00B7', '.'}, {U'\x2219', '.'}, {U'\x22C5', '.'},
    {U'\x2022', '.'}, {U'\x00B5', 'u'}, {U'\x03BC', 'u'}, {U'\x2044', '/'}, {U'\x2215', '/'},
}};

// A candidate answer and where its match starts (byte offset; same order as code points).
struct Candidate {
  std::size_t start;
  std::string text;
};

std::optional<std::string> parse_answer_letter(std::string_view candidate,
                                               const McqaLetters& allowed) {
  if (py_len(candidate) == 1 && py_isalpha(candidate)) {
    std::string letter = py_upper(candidate);
    if (allowed.contains(letter)) return letter;
    return std::nullopt;
  }
  static const PyRegex option_letter(R"((?i)(?:option|choice)\s+([A-Z])\s*[\)\].:]?)");
  static const PyRegex leading_letter(R"((?i)^([A-Z])[\)\].:](?:\s|$))");
  static const PyRegex lone_letter(R"([^A-Za-z]*([A-Za-z])[^A-Za-z]*)");
  std::optional<PyMatch> m = option_letter.fullmatch(candidate);
  if (m) {
    std::string letter = py_upper(m->group(1));
    if (allowed.contains(letter)) return letter;
  }
  m = leading_letter.match(candidate);
  if (m) {
    std::string letter = py_upper(m->group(1));
    if (allowed.contains(letter)) return letter;
  }
  m = lone_letter.fullmatch(candidate);  // "A." or "(B)"
  if (m) {
    std::string letter = py_upper(m->group(1));
    if (allowed.contains(letter)) return letter;
  }
  return std::nullopt;
}

std::optional<std::string> parse_option_text(std::string_view candidate,
                                             const BunsenOptions& options,
                                             const McqaLetters& allowed) {
  std::string wanted = bunsen_normalize_chemistry_text(candidate);
  for (const auto& option : options) {
    std::string letter = py_upper(option.letter);
    if (allowed.contains(letter) && bunsen_normalize_chemistry_text(option.text) == wanted)
      return letter;
  }
  return std::nullopt;
}

// Spans of the <choices>...</choices> blocks.
std::vector<std::pair<std::size_t, std::size_t>> choices_blocks(std::string_view text) {
  static const PyRegex block(R"(<\s*choices\b[^>]*>.*?<\s*/\s*choices\s*>)",
                             PyRegex::kIgnoreCase | PyRegex::kDotAll);
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  for (const auto& m : block.finditer(text)) spans.emplace_back(m.start(), m.end());
  return spans;
}

bool inside(const std::vector<std::pair<std::size_t, std::size_t>>& spans, std::size_t pos) {
  return std::any_of(spans.begin(), spans.end(),
                     [pos](const auto& span) { return span.first <= pos && pos < span.second; });
}

// _boxed_candidate_matches: each \boxed{...} (spaces allowed before the brace) left to right,
// braces counted with backslash escapes skipped; stops at the first one that never closes.
void add_boxed_candidates(std::string_view text, std::vector<Candidate>& out) {
  static const PyRegex marker(R"(\\boxed\s*\{)");
  std::size_t search_pos = 0;
  while (true) {
    auto m = marker.search(text.substr(search_pos));
    if (!m) return;
    std::size_t brace = search_pos + m->end() - 1;
    std::size_t start = search_pos + m->start();
    int depth = 1;
    std::size_t pos = brace + 1;
    // Only ASCII bytes are compared, so stepping through a multi-byte character byte by byte
    // is stepping over it.
    while (pos < text.size() && depth != 0) {
      if (text[pos] == '\\') {
        pos += 1;
        if (pos < text.size()) next_code_point(text, pos);
        continue;
      }
      if (text[pos] == '{') {
        ++depth;
      } else if (text[pos] == '}') {
        --depth;
      }
      ++pos;
    }
    if (depth != 0) return;
    out.push_back({start, std::string(text.substr(brace + 1, pos - 1 - (brace + 1)))});
    search_pos = pos;
  }
}

std::vector<Candidate> answer_candidates(std::string_view text) {
  static const PyRegex xml_answer(
      R"(<\s*(answer|choice|response|final_answer|final-answer)\b[^>]*>\s*(.*?)\s*)"
      R"(<\s*/\s*\1\s*>)",
      PyRegex::kIgnoreCase | PyRegex::kDotAll);
  static const PyRegex answer_line(
      R"((?im)^\s*(?:(?:[-*•]|\d+[.)])\s*)?(?:\*\*)?answer(?:\*\*)?\s*:\s*(.+?)\s*$)");
  static const PyRegex inline_answer(R"((?is)(?:\*\*)?answer(?:\*\*)?\s*:\s*(.+?)(?=$|[\r\n]))");
  static const PyRegex answer_phrase(
      R"((?is)(?:the\s+(?:correct\s+)?answer\s+is|my\s+answer\s+is|i\s+(?:choose|select)))"
      R"(\s+(.+?)(?:\n|$))");
  std::vector<Candidate> out;
  auto blocks = choices_blocks(text);
  for (const auto& m : xml_answer.finditer(text)) {
    if (py_lower(m.group(1)) == "choice" && inside(blocks, m.start())) continue;
    out.push_back({m.start(), std::string(m.group(2))});
  }
  add_boxed_candidates(text, out);
  for (const PyRegex* pattern : {&answer_line, &inline_answer, &answer_phrase})
    for (const auto& m : pattern->finditer(text))
      out.push_back({m.start(), std::string(m.group(1))});
  return out;
}

bool has_refusal_part(const json::object& response) {
  const auto* output = response.if_contains("output");
  if (!output || !output->is_array()) return false;
  for (const auto& item : output->get_array()) {
    const auto* content = item.is_object() ? item.get_object().if_contains("content") : nullptr;
    if (!content || !content->is_array()) continue;
    for (const auto& part : content->get_array())
      if (part.is_object() && part.get_object().contains("type") &&
          part.get_object().at("type") == "refusal")
        return true;
  }
  return false;
}

bool is_truncated(const json::object& response) {
  if (const auto* status = response.if_contains("status"); status && *status == "incomplete")
    return true;
  if (const auto* details = response.if_contains("incomplete_details");
      details && details->is_object()) {
    const auto* reason = details->get_object().if_contains("reason");
    if (reason && *reason == "max_output_tokens") return true;
  }
  const auto* output = response.if_contains("output");
  if (!output || !output->is_array()) return false;
  for (const auto& item : output->get_array()) {
    if (!item.is_object()) continue;
    const auto* status = item.get_object().if_contains("status");
    if (status && *status == "incomplete") return true;
  }
  return false;
}

bool has_unclosed_think(std::string_view text) {
  static const PyRegex open(R"(<\s*think\b[^>]*>)", PyRegex::kIgnoreCase);
  static const PyRegex close(R"(<\s*/\s*think\s*>)", PyRegex::kIgnoreCase);
  return open.finditer(text).size() > close.finditer(text).size();
}

bool refusal_phrase(std::string_view text) {
  static const PyRegex pattern(
      R"((?i)(?:)"
      R"(i\s*(?:'|’)?\s*m\s+sorry[, ]+(?:but\s+)?i\s+(?:can(?:'|’)?t|cannot|am\s+unable|won(?:'|’)?t))"
      R"(|i\s+(?:can(?:'|’)?t|cannot)\s+(?:help|assist|comply|provide|answer|do\s+that|continue))"
      R"(|i\s+am\s+(?:not\s+able|unable)\s+to\s+(?:help|assist|comply|provide|answer))"
      R"(|i\s+won(?:'|’)?t\s+be\s+able\s+to\s+(?:help|assist|provide|answer))"
      R"(|as\s+an\s+ai(?:\s+language)?\s+model[, ]+i)"
      R"(|i\s+(?:must|have\s+to|will\s+have\s+to)\s+(?:decline|refuse))"
      R"(|i\s+do\s+not\s+feel\s+comfortable)"
      R"())");
  return pattern.search(text).has_value();
}

bool choice_tag_outside_choices(std::string_view text) {
  static const PyRegex tag(R"(<\s*choice\b[^>]*>\s*(.*?)\s*<\s*/\s*choice\s*>)",
                           PyRegex::kIgnoreCase | PyRegex::kDotAll);
  auto blocks = choices_blocks(text);
  for (const auto& m : tag.finditer(text))
    if (!inside(blocks, m.start())) return true;
  return false;
}

}  // namespace

std::string bunsen_normalize_chemistry_text(std::string_view value) {
  std::string normalized = py_nfkc(py_html_unescape(value));
  std::string folded;
  for (std::size_t i = 0; i < normalized.size();) {
    char32_t c = next_code_point(normalized, i);
    auto fold = std::find_if(kChemistryFolds.begin(), kChemistryFolds.end(),
                             [c](const auto& entry) { return entry.first == c; });
    if (fold != kChemistryFolds.end()) {
      folded += fold->second;
    } else if (py_unicode_category(c) != "Cf") {
      append_utf8(folded, c);
    }
  }
  return py_collapse_whitespace(folded);
}

std::string bunsen_strip_wrappers(std::string_view candidate) {
  static const PyRegex boxed(R"(\\boxed\{\s*(.*?)\s*\})", PyRegex::kDotAll);
  static const PyRegex wrapper(R"(\\(?:text|mathrm|operatorname)\{\s*(.*?)\s*\})",
                               PyRegex::kDotAll);
  static constexpr std::string_view kOpen = "([{\"'<";
  static constexpr std::string_view kClose = ")]}\"'>";
  std::string c = py_strip_chars(candidate, kEdgeChars);
  if (auto m = boxed.fullmatch(c)) c = py_strip(m->group(1));
  while (auto m = wrapper.fullmatch(c)) c = py_strip(m->group(1));
  // Both ends are ASCII when they match, so cutting a byte cuts a code point.
  while (py_len(c) >= 2 && kOpen.find(c.front()) != std::string_view::npos &&
         kClose.find(c.back()) != std::string_view::npos)
    c = py_strip_chars(std::string_view(c).substr(1, c.size() - 2), kEdgeChars);
  return py_strip_chars(c, " \t\r\n`*_\"'.;,");
}

std::optional<std::string> bunsen_parse_candidate(std::string_view candidate,
                                                  const BunsenOptions& options,
                                                  const McqaLetters& allowed) {
  std::string c = py_strip(candidate);
  if (c.empty()) return std::nullopt;
  if (auto letter = parse_answer_letter(c, allowed)) return letter;
  if (auto letter = parse_option_text(c, options, allowed)) return letter;
  c = bunsen_strip_wrappers(c);
  if (c.empty()) return std::nullopt;
  if (auto letter = parse_answer_letter(c, allowed)) return letter;
  return parse_option_text(c, options, allowed);
}

std::optional<std::string> bunsen_extract_answer(std::string_view text,
                                                 const BunsenOptions& options,
                                                 const McqaLetters& allowed) {
  auto candidates = answer_candidates(text);
  // sorted(..., reverse=True) on (start, text) pairs.
  std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return std::tie(a.start, a.text) > std::tie(b.start, b.text);
  });
  for (const auto& candidate : candidates)
    if (auto letter = bunsen_parse_candidate(candidate.text, options, allowed)) return letter;

  // Last resort: the last non-blank line, then the first.
  std::vector<std::string> lines;
  for (const auto& line : py_splitlines(text))
    if (std::string stripped = py_strip(line); !stripped.empty()) lines.push_back(stripped);
  if (lines.empty()) return std::nullopt;
  if (auto letter = bunsen_parse_candidate(lines.back(), options, allowed)) return letter;
  return bunsen_parse_candidate(lines.front(), options, allowed);
}

std::string bunsen_error_mode(const json::object& response, std::string_view raw_text,
                              const std::optional<std::string>& pred, std::string_view gold) {
  if (pred) return *pred == gold ? "correct" : "wrong_answer";
  if (has_refusal_part(response)) return "refusal";
  if (is_truncated(response) || has_unclosed_think(raw_text)) return "early_termination";
  if (refusal_phrase(raw_text)) return "refusal";
  if (choice_tag_outside_choices(raw_text)) return "malformed_choice";
  return "format_violation";
}

}  // namespace gym::environments
