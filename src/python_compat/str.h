#pragma once
// Python's str methods over Unicode code points (docs/reference/python-compat.md), as the verifiers
// use them: UTF-8 in and out, ICU for character properties, case mapping and NFKC.
//
// Thread safety: every function is reentrant.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gym::python_compat {

// Python's repr() of a str: 'text' (or "text" when it holds ' and no "), escapes as Python's.
std::string py_repr(std::string_view s);

// str.isspace() of one code point: general category Zs or bidirectional class WS, B or S
// (so U+001C..U+001F and U+0085 are whitespace, as in Python).
bool py_isspace(char32_t c);

std::size_t py_len(std::string_view s);             // len(): code points
std::u32string py_code_points(std::string_view s);  // list(s), as code points

std::string py_strip(std::string_view s);   // s.strip()
std::string py_lstrip(std::string_view s);  // s.lstrip()
std::string py_rstrip(std::string_view s);  // s.rstrip()
// s.strip(chars) / s.rstrip(chars): `chars` is a set of code points given as UTF-8 text.
std::string py_strip_chars(std::string_view s, std::string_view chars);
std::string py_rstrip_chars(std::string_view s, std::string_view chars);

std::vector<std::string> py_split(std::string_view s);       // s.split()
std::string py_collapse_whitespace(std::string_view s);      // " ".join(s.split())
std::vector<std::string> py_splitlines(std::string_view s);  // s.splitlines()

std::string py_lower(std::string_view s);  // full Unicode case mapping (final sigma included)
std::string py_upper(std::string_view s);
std::string py_nfkc(std::string_view s);  // unicodedata.normalize("NFKC", s)

// s.isalpha(): non-empty and every code point is a letter (general category L*).
bool py_isalpha(std::string_view s);
// s.isupper(): at least one upper-case code point (property Uppercase: Lu and e.g. Roman numerals
// and circled letters) and none lower-case (property Lowercase) or title-case (Lt).
bool py_isupper(std::string_view s);

// unicodedata.category(c): the two-letter general category ("Lu", "Cf", "Cn" for unassigned).
std::string_view py_unicode_category(char32_t c);

// s.replace(old, new) for a non-empty `old` (UTF-8 is self-synchronising, so byte search finds
// exactly the code-point matches).
std::string py_replace(std::string_view s, std::string_view old_text, std::string_view new_text);

// float(s): surrounding whitespace, sign, digits (any Unicode decimal digit) with single
// underscores between digits, fraction, exponent, "inf"/"infinity"/"nan" in any case.
// nullopt where Python raises ValueError. Out-of-range values become inf or 0.0 as in Python.
std::optional<double> py_float(std::string_view s);

}  // namespace gym::python_compat
