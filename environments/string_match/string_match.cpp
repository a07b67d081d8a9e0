#include "core/json_text.h"
#include "python_compat/latex.h"
#include "python_compat/re.h"
#include "python_compat/str.h"
#include "servers/resources_server.h"
#include "servers/responses_api.h"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

namespace gym::environments {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;
using http::Schema;
using python_compat::py_replace;
using python_compat::py_strip;
using python_compat::PyRegex;
using python_compat::strip_latex_wrappers;

namespace {

// ---- extraction ------------------------------------------------------------------------------

// Texts of the assistant messages, joined with "\n", stripped.
std::string assistant_text(const json::array& output) {
  return py_strip(servers::assistant_text(output));
}

// The content of the last \boxed{...} that closes (earlier ones are tried when it does not).
std::optional<std::string> extract_boxed(std::string_view text) {
  static constexpr std::string_view kMarker = "\\boxed{";
  std::vector<std::size_t> starts;
  for (auto at = text.find(kMarker); at != std::string_view::npos;
       at = text.find(kMarker, at + kMarker.size()))
    starts.push_back(at + kMarker.size());
  for (auto it = starts.rbegin(); it != starts.rend(); ++it) {
    int depth = 1;
    for (std::size_t i = *it; i < text.size(); ++i) {
      if (text[i] == '{') ++depth;
      if (text[i] == '}') --depth;
      if (depth == 0) return py_strip(strip_latex_wrappers(py_strip(text.substr(*it, i - *it))));
    }
  }
  return std::nullopt;
}

std::optional<std::string> extract_final_answer(std::string_view text) {
  static const PyRegex pattern(R"((?i)(?:final\s+answer|answer)\s*[:：]\s*(.+))");
  static const PyRegex final_dot(R"(\.\s*$)");
  auto matches = pattern.findall(text);
  if (matches.empty()) return std::nullopt;
  std::string raw = py_strip(matches.back());
  if (auto m = final_dot.search(raw)) raw = raw.substr(0, m->start());  // re.split(...)[0]
  return python_compat::py_rstrip_chars(py_strip(raw), ".");
}

std::optional<std::string> extract_last_line(std::string_view text) {
  auto lines = python_compat::py_splitlines(text);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    std::string line = py_strip(*it);
    if (!line.empty()) return line;
  }
  return std::nullopt;
}

std::optional<std::string> extract_answer(std::string_view text, std::string_view mode) {
  if (mode == "boxed") return extract_boxed(text);
  if (mode == "final_answer") {
    auto answer = extract_final_answer(text);
    return answer ? answer : extract_boxed(text);
  }
  if (mode == "last_line") return extract_last_line(text);
  if (mode == "full_response") {
    std::string stripped = py_strip(text);
    if (stripped.empty()) return std::nullopt;
    return stripped;
  }
  return std::nullopt;
}

// ---- grading ---------------------------------------------------------------------------------

std::string strip_outer_quotes(const std::string& text) {
  if (python_compat::py_len(text) >= 2 && (text.front() == '"' || text.front() == '\'') &&
      text.back() == text.front())
    return text.substr(1, text.size() - 2);
  return text;
}

std::string strip_trailing_punctuation(const std::string& text) {
  std::string stripped = python_compat::py_rstrip_chars(text, ".!?");
  return stripped.empty() ? text : stripped;
}

// F: the Python repr of the number, or the input when it is not one.
std::string normalize_float(const std::string& text) {
  std::string cleaned =
      py_strip(py_replace(py_replace(py_replace(text, "\\%", ""), "\\$", ""), "$", ""));
  if (auto value = python_compat::py_float(cleaned)) return core::python_float_repr(*value);
  return text;
}

// N: "1,234" -> "1234" (one pass), "\%" -> "%".
std::string normalize_numbers(const std::string& text) {
  static const PyRegex thousands(R"((\d+),(\d+))");
  return py_replace(thousands.sub("\\1\\2", text), "\\%", "%");
}

// S: list separators and the substrings "and"/"or" become spaces, unless that removes > 10%.
std::string normalize_lists(const std::string& text) {
  std::size_t original_len = python_compat::py_len(text);
  std::string out = py_replace(py_replace(text, ",", " "), ";", " ");
  out = py_replace(py_replace(out, "and", " "), "or", " ");
  if (static_cast<double>(python_compat::py_len(out)) < 0.9 * static_cast<double>(original_len))
    return text;
  return python_compat::py_collapse_whitespace(out);
}

// Drops `cmd{` and its matching `}` (only `cmd{` when it never closes), until none is left.
std::string remove_latex_command(std::string text, std::string_view cmd) {
  std::string open = std::string(cmd) + "{";
  for (auto at = text.find(open); at != std::string::npos; at = text.find(open)) {
    std::string prefix = text.substr(0, at);
    std::string suffix = text.substr(at + open.size());
    int depth = 1;
    std::size_t close = std::string::npos;
    for (std::size_t i = 0; i < suffix.size(); ++i) {
      if (suffix[i] == '{') ++depth;
      if (suffix[i] == '}') --depth;
      if (depth == 0) {
        close = i;
        break;
      }
    }
    text = close == std::string::npos ? prefix + suffix
                                      : prefix + suffix.substr(0, close) + suffix.substr(close + 1);
  }
  return text;
}

// L: LaTeX text commands, math delimiters and $ removed, whitespace collapsed.
std::string normalize_latex(std::string text) {
  static constexpr std::array<std::string_view, 13> kCommands{
      "\\boxed",  "\\text",   "\\textbf", "\\textit",  "\\texttt", "\\mathrm", "\\mathbf",
      "\\mathit", "\\mathsf", "\\mathbb", "\\mathcal", "\\emph",   "\\url"};
  for (auto cmd : kCommands) text = remove_latex_command(std::move(text), cmd);
  for (auto token : {"\\(", "\\)", "\\[", "\\]"}) text = py_replace(text, token, "");
  text = py_replace(text, "$", "");
  return python_compat::py_collapse_whitespace(text);
}

// U: US state names (multi-word first) become their codes, then S, then lower-case.
std::string normalize_states(std::string text) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 51> kStates{{
      {"district of columbia", "DC"},
      {"new hampshire", "NH"},
      {"new jersey", "NJ"},
      {"new mexico", "NM"},
      {"new york", "NY"},
      {"north carolina", "NC"},
      {"north dakota", "ND"},
      {"rhode island", "RI"},
      {"south carolina", "SC"},
      {"south dakota", "SD"},
      {"west virginia", "WV"},
      {"alabama", "AL"},
      {"alaska", "AK"},
      {"arizona", "AZ"},
      {"arkansas", "AR"},
      {"california", "CA"},
      {"colorado", "CO"},
      {"connecticut", "CT"},
      {"delaware", "DE"},
      {"florida", "FL"},
      {"georgia", "GA"},
      {"hawaii", "HI"},
      {"idaho", "ID"},
      {"illinois", "IL"},
      {"indiana", "IN"},
      {"iowa", "IA"},
      {"kansas", "KS"},
      {"kentucky", "KY"},
      {"louisiana", "LA"},
      {"maine", "ME"},
      {"maryland", "MD"},
      {"massachusetts", "MA"},
      {"michigan", "MI"},
      {"minnesota", "MN"},
      {"mississippi", "MS"},
      {"missouri", "MO"},
      {"montana", "MT"},
      {"nebraska", "NE"},
      {"nevada", "NV"},
      {"ohio", "OH"},
      {"oklahoma", "OK"},
      {"oregon", "OR"},
      {"pennsylvania", "PA"},
      {"tennessee", "TN"},
      {"texas", "TX"},
      {"utah", "UT"},
      {"vermont", "VT"},
      {"virginia", "VA"},
      {"washington", "WA"},
      {"wisconsin", "WI"},
      {"wyoming", "WY"},
  }};
  for (const auto& [name, code] : kStates) text = py_replace(text, name, code);
  return python_compat::py_lower(normalize_lists(text));
}

std::string normalize_unicode_math(std::string text) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 17> kMap{{
      {"°", "^\\circ"},
      {"²", "^2"},
      {"³", "^3"},
      {"⁴", "^4"},
      {"⁵", "^5"},
      {"⁶", "^6"},
      {"⁷", "^7"},
      {"⁸", "^8"},
      {"⁹", "^9"},
      {"√", "\\sqrt"},
      {"﹣", "-"},
      {"﹢", "+"},
      {"﹦", "="},
      {"﹤", "<"},
      {"﹥", ">"},
      {"：", ":"},
      {"π", "\\pi"},
  }};
  for (const auto& [from, to] : kMap) text = py_replace(text, from, to);
  return text;
}

// M: degree signs and units removed (every "m" goes, as upstream's pattern has it).
std::string remove_units(const std::string& text) {
  static const PyRegex units(R"(\^\{?\\circ\}?|\\circ|°|cm[²³]?|mm|km|m[²³]?|kg)");
  return units.sub("", text);
}

std::string strip_numeric(std::string text) {
  for (auto c : {"$", "£", "€", "%", ","}) text = py_replace(text, c, "");
  text = remove_units(normalize_unicode_math(std::move(text)));
  return py_strip(py_replace(py_replace(text, "\\%", ""), "\\$", ""));
}

// max(0, 1 - relative error)^2 when both parse as floats, else 0 (a NaN counts as 0).
double soft_numeric_grade(const std::string& gt, const std::string& pred) {
  auto p = python_compat::py_float(strip_numeric(pred));
  if (!p) return 0.0;
  auto g = python_compat::py_float(strip_numeric(gt));
  if (!g) return 0.0;
  double rel_error = std::fabs(*p - *g) / std::max(std::fabs(*g), 1e-9);
  double score = 1.0 - rel_error;
  if (!(score > 0.0)) return 0.0;  // max(0.0, x) keeps 0.0 unless x is greater
  return score * score;
}

double grade(const std::string& expected, const std::string& extracted) {
  std::string p = python_compat::py_lower(strip_outer_quotes(python_compat::py_nfkc(extracted)));
  std::string g = python_compat::py_lower(strip_outer_quotes(python_compat::py_nfkc(expected)));
  p = strip_trailing_punctuation(p);
  g = strip_trailing_punctuation(g);
  if (p == g) return 1.0;
  if (normalize_float(p) == normalize_float(g)) return 1.0;
  if (normalize_numbers(p) == normalize_numbers(g)) return 1.0;
  if (normalize_latex(p) == normalize_latex(g)) return 1.0;
  if (normalize_lists(p) == normalize_lists(g)) return 1.0;
  if (normalize_states(p) == normalize_states(g)) return 1.0;
  if (soft_numeric_grade(g, p) > 0.98) return 0.98;
  std::string p2 = py_strip(remove_units(normalize_unicode_math(normalize_latex(p))));
  std::string g2 = py_strip(remove_units(normalize_unicode_math(normalize_latex(g))));
  if (p2 == g2) return 1.0;
  if (soft_numeric_grade(g2, p2) > 0.98) return 0.98;
  return 0.0;
}

json::object verify(const json::object& row) {
  std::string expected(row.at("expected_answer").get_string());
  const auto* mode_value = row.if_contains("extraction_mode");
  std::string mode = mode_value ? std::string(mode_value->get_string()) : "final_answer";
  const auto* case_value = row.if_contains("case_sensitive");
  bool case_sensitive = case_value && case_value->get_bool();

  std::string text = assistant_text(row.at("response").at("output").get_array());
  auto extracted = extract_answer(text, mode);
  double reward = 0.0;
  if (extracted && !expected.empty()) {
    reward = case_sensitive ? (py_strip(*extracted) == py_strip(expected) ? 1.0 : 0.0)
                            : grade(expected, *extracted);
  }
  json::object out = servers::verify_response(row, reward);
  out["expected_answer"] = expected;
  out["extracted_answer"] = extracted ? json::value(*extracted) : json::value(nullptr);
  return out;
}

}  // namespace

// StringMatchResourcesServer (README.md here): extracts a free-form answer from the assistant text
// (boxed, final answer, last line or the whole text) and grades it against `expected_answer` with
// NeMo RL's normalising string match (rewards 0.0, 0.98 or 1.0).
// Registered by the generated builtin_environments.cpp (environments/CMakeLists.txt).
servers::Environment string_match_environment() {
  return {
      "string_match",
      "StringMatchResourcesServer",
      [](servers::ServerContext&, http::Router&) -> servers::VerifyRoute {
        auto verify_schema = servers::verify_request_schema({
            {"expected_answer", Schema::of(Schema::Kind::string), true},
            {"extraction_mode",
             Schema::literal_of({"boxed", "final_answer", "last_line", "full_response"}), false},
            {"case_sensitive", Schema::of(Schema::Kind::boolean), false},
            {"metadata", Schema::of(Schema::Kind::dict, true), false},
        });
        return {[](Request&, json::value& body) -> asio::awaitable<Response> {
                  co_return Response::json(verify(body.get_object()));
                },
                verify_schema};
      },
  };
}

}  // namespace gym::environments
