#pragma once
// The parts of upstream's mcqa (resources_servers/mcqa/app.py) that the environments built on
// it share: gpqa_diamond and bunsenbench_chemistry_mcq take mcqa's request model, its option
// letters, its text view of the Response and (gpqa_diamond) its custom-pattern extraction
// (README.md here).
//
// Thread safety: every function is reentrant.
#include "http/schema.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gym::environments {

// Upper-case option letters.
using McqaLetters = std::set<std::string>;

// The fields MCQARunRequest adds to a verify request, in upstream's order: uuid, options,
// expected_answer, metadata, grading_mode (one of the three row modes), template_metadata.
std::vector<http::SchemaField> mcqa_request_fields();

// The instance's `grading_mode` (MCQAResourcesServerConfig; null: each row's own), checked at
// startup: anything but null or one of the four modes is a core::ConfigError naming `env`.
std::optional<std::string> mcqa_config_grading_mode(const boost::json::object& config,
                                                    std::string_view env);

// row[key], or null when the row has no such member.
const boost::json::value& mcqa_field(const boost::json::object& row, std::string_view key);

// The /verify answer of an MCQ environment: reward 1.0 iff a letter was found, the gold (the
// row's expected_answer stripped and upper-cased, "" when absent) is non-empty and they are
// equal; then `expected_answer` (the gold) and `extracted_answer` (the letter or null).
boost::json::object mcqa_verify_answer(const boost::json::object& row,
                                       const std::optional<std::string>& letter);

// response.output_text (docs/design/conformance.md#text-views-of-a-response): the text of every
// output_text part of every message item, concatenated. A message whose content is a non-empty
// string raises AttributeError, as upstream's does.
std::string mcqa_output_text(const boost::json::array& output);

// The options' entries as (key, value) pairs in order; null options give none.
std::vector<std::pair<std::string, const boost::json::value*>> mcqa_option_pairs(
    const boost::json::value& options);

// _get_allowed_letters_from_options: the upper-cased keys that are one alphabetic character and
// whose value is not null.
McqaLetters mcqa_allowed_letters(const boost::json::value& options);

// _normalize_for_match: lower-cased, whitespace runs collapsed to one space, stripped.
std::string mcqa_normalize_for_match(std::string_view s);

// _normalize_extracted_answer: Arabic, Bengali and full-width A-D become " A".." D", stripped.
std::string mcqa_normalize_letters(std::string_view text);

// _parse_answer_with_custom_regex: one template_metadata.output_regex `pattern`, matched
// case-insensitively; the last match, stripped and letter-normalised, upper-cased; a single
// alphabetic character is trusted as is, otherwise the allowed option whose normalised text
// equals it. Nothing for a pattern that does not compile. Raises where upstream's re.findall
// does: TypeError for a pattern that is not a string ("unhashable type: 'list'" for a list or
// an object), AttributeError when a pattern with two or more groups matches.
std::optional<std::string> mcqa_custom_regex(std::string_view text,
                                             const boost::json::value& pattern,
                                             const boost::json::value& options,
                                             const McqaLetters& allowed);

}  // namespace gym::environments
