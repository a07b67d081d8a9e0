#pragma once
// bunsenbench_chemistry_mcq's answer extraction and error-mode classification (upstream's
// extract_bunsen_answer, normalize_chemistry_text and classify_error_mode), exposed for tests.
//
// Thread safety: every function is reentrant.
#include "mcqa/mcqa_common.h"

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gym::environments {

struct BunsenOption {
  std::string letter;  // the key as given ("A", or a multi-character key that never matches)
  std::string text;
};
// The options of a row, in order (upstream's list of single-entry dicts, flattened).
using BunsenOptions = std::vector<BunsenOption>;

// normalize_chemistry_text: html.unescape, NFKC, chemistry look-alikes folded (sub- and
// superscript digits and signs, dashes and minus signs -> "-", multiplication signs -> "x",
// middle dots and bullets -> ".", micro and mu -> "u", fraction and division slashes -> "/"),
// format characters (category Cf) removed, whitespace runs collapsed to one space.
std::string bunsen_normalize_chemistry_text(std::string_view value);

// _strip_wrappers: edge quotes, backticks, '*' and '_' stripped; a whole \boxed{...} and any
// number of whole \text{}, \mathrm{} or \operatorname{} unwrapped; then while the ends are an
// opening and a closing bracket or quote (not necessarily a pair) they are cut off; finally
// '.', ';' and ',' are stripped too.
std::string bunsen_strip_wrappers(std::string_view candidate);

// _parse_candidate: the allowed letter a candidate answer names (a lone letter, `option B`,
// `B)`, `(B)`, ...) or the allowed option whose normalised text equals it; the same again after
// bunsen_strip_wrappers. Option texts compare case-sensitively ("na" is not "Na").
std::optional<std::string> bunsen_parse_candidate(std::string_view candidate,
                                                  const BunsenOptions& options,
                                                  const McqaLetters& allowed);

// extract_bunsen_answer over the stripped response text: every candidate (<answer>, <choice>
// outside a <choices> block, <response>, <final_answer>, <final-answer> tags; balanced
// \boxed{...}; `Answer:` lines; inline `answer:`; "the answer is", "I choose", ...) from the
// one starting last to the one starting first (equal starts: the greater text first); the first
// that parses wins; else the last non-blank line, then the first.
std::optional<std::string> bunsen_extract_answer(std::string_view text,
                                                 const BunsenOptions& options,
                                                 const McqaLetters& allowed);

// classify_error_mode: "correct" / "wrong_answer" when a letter was extracted; else "refusal"
// (a refusal content part), "early_termination" (status or an item incomplete,
// incomplete_details.reason max_output_tokens, or more <think> openings than closings in the
// raw text), "refusal" (a refusal phrase), "malformed_choice" (a <choice> tag outside any
// <choices> block) or "format_violation", tested in that order.
std::string bunsen_error_mode(const boost::json::object& response, std::string_view raw_text,
                              const std::optional<std::string>& pred, std::string_view gold);

}  // namespace gym::environments
