#pragma once
// Python semantics the verifiers are defined in (environments.md 1.3): str methods over Unicode
// code points, `re` matching, `json.loads` and `==` on JSON values. Text is UTF-8 in and out;
// offsets are byte offsets into the UTF-8 text (they delimit the same substrings as Python's
// code-point offsets). Only what the bundled environments use is here.
//
// Thread safety: free functions are reentrant; a compiled PyRegex may be shared by threads.
#include <boost/json/value.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gym::servers {

// ---- exceptions ------------------------------------------------------------------------------

// Python's exception types under Python's names: a verifier that fails where upstream raises
// answers 500 with the same "<type>: <message>" body (runtime.md 4.2), e.g. "KeyError: 'x'".
class PyException : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class KeyError : public PyException {
 public:
  using PyException::PyException;
};
class TypeError : public PyException {
 public:
  using PyException::PyException;
};
class ValueError : public PyException {
 public:
  using PyException::PyException;
};
class AttributeError : public PyException {
 public:
  using PyException::PyException;
};
class ZeroDivisionError : public PyException {
 public:
  using PyException::PyException;
};
class OverflowError : public PyException {
 public:
  using PyException::PyException;
};
class RecursionError : public PyException {
 public:
  using PyException::PyException;
};
// json.JSONDecodeError, with Python's message ("Expecting value: line 1 column 1 (char 0)").
class JSONDecodeError : public ValueError {
 public:
  using ValueError::ValueError;
};
// re.error: the pattern does not compile.
class PyRegexError : public PyException {
 public:
  using PyException::PyException;
};

// Python's repr() of a str: 'text' (or "text" when it holds ' and no "), escapes as Python's.
std::string py_repr(std::string_view s);

// ---- str -------------------------------------------------------------------------------------

// str.isspace() of one code point: general category Zs or bidirectional class WS, B or S
// (so U+001C..U+001F and U+0085 are whitespace, as in Python).
bool py_isspace(char32_t c);

std::size_t py_len(std::string_view s);  // len(): code points
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

// s.replace(old, new) for a non-empty `old` (UTF-8 is self-synchronising, so byte search finds
// exactly the code-point matches).
std::string py_replace(std::string_view s, std::string_view old_text, std::string_view new_text);

// float(s): surrounding whitespace, sign, digits (any Unicode decimal digit) with single
// underscores between digits, fraction, exponent, "inf"/"infinity"/"nan" in any case.
// nullopt where Python raises ValueError. Out-of-range values become inf or 0.0 as in Python.
std::optional<double> py_float(std::string_view s);

// ---- re --------------------------------------------------------------------------------------

// A successful match: spans of every group in the subject (group 0 = whole match).
class PyMatch {
 public:
  PyMatch(std::string_view subject, std::vector<std::pair<std::size_t, std::size_t>> spans);

  bool matched(std::size_t group) const;  // False for a group that did not participate
  std::size_t start(std::size_t group = 0) const;
  std::size_t end(std::size_t group = 0) const;
  // The group's text; "" for a group that did not participate (as findall and \N in sub).
  std::string_view group(std::size_t group = 0) const;
  std::size_t group_count() const { return spans_.size() - 1; }

 private:
  static constexpr std::size_t kUnset = static_cast<std::size_t>(-1);
  std::string_view subject_;
  std::vector<std::pair<std::size_t, std::size_t>> spans_;  // kUnset pairs for unset groups
};

// A compiled Python `re` pattern over PCRE2 with UTF and UCP: \s \d \w \b are Unicode-aware,
// `.` excludes only "\n", `$` also matches before a final "\n", IGNORECASE is Unicode caseless.
// Python spellings PCRE2 reads differently are rewritten: `\Z` (absolute end) and `\s`/`\S`
// outside sets (Python's \s also covers U+001C..U+001F; inside a set only `\s` is widened).
// Matching errors (PCRE2's match limit, invalid UTF-8 subjects) throw std::runtime_error.
class PyRegex {
 public:
  enum Flags : unsigned { kNone = 0, kIgnoreCase = 1, kDotAll = 2, kMultiline = 4 };

  explicit PyRegex(std::string_view pattern, unsigned flags = kNone);  // throws PyRegexError
  ~PyRegex();
  PyRegex(PyRegex&&) noexcept;
  PyRegex& operator=(PyRegex&&) noexcept;
  PyRegex(const PyRegex&) = delete;
  PyRegex& operator=(const PyRegex&) = delete;

  std::size_t group_count() const { return groups_; }

  std::optional<PyMatch> search(std::string_view text, std::size_t pos = 0) const;  // re.search
  std::optional<PyMatch> match(std::string_view text) const;      // re.match: at the start
  std::optional<PyMatch> fullmatch(std::string_view text) const;  // re.fullmatch
  // re.finditer: non-overlapping, left to right; an empty match is never followed by another
  // empty match at the same position (Python 3.7+).
  std::vector<PyMatch> finditer(std::string_view text) const;
  // re.findall for patterns with at most one group: the group's text (or the whole match).
  // Throws std::logic_error for two or more groups (Python returns tuples there).
  std::vector<std::string> findall(std::string_view text) const;
  // re.sub(pattern, repl, text) with a template whose `\1`..`\9` insert groups.
  std::string sub(std::string_view replacement, std::string_view text) const;

 private:
  std::optional<PyMatch> run(std::string_view text, std::size_t pos, unsigned options) const;

  struct Code;
  std::unique_ptr<Code> code_;
  std::size_t groups_ = 0;
};

// ---- json ------------------------------------------------------------------------------------

// json.loads(text): NaN, Infinity and -Infinity are floats; a duplicated key keeps its last
// value (at the first key's position); integers are exact within 64 bits (larger ones become
// doubles); lone surrogate escapes become U+FFFD. Throws JSONDecodeError; nesting deeper than
// 1000 levels throws RecursionError.
boost::json::value py_json_loads(std::string_view text);

// ---- == --------------------------------------------------------------------------------------

// Python equality of JSON values: numbers by exact value across int and float (1 == 1.0),
// true == 1 and false == 0, NaN equal to nothing, strings never equal to numbers, objects as
// unordered key sets with equal values, arrays element-wise.
bool py_equal(const boost::json::value& a, const boost::json::value& b);

// type(v).__name__ of the value json.loads would build: NoneType, bool, int, float, str, list,
// dict.
std::string py_type_name(const boost::json::value& v);

// hash() would succeed: not a list and not a dict.
bool py_hashable(const boost::json::value& v);

}  // namespace gym::servers
