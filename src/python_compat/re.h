#pragma once
// Python's `re` over PCRE2 (docs/reference/python-compat.md). Offsets are byte offsets into the
// UTF-8 subject (they delimit the same substrings as Python's code-point offsets).
//
// Thread safety: a compiled PyRegex may be shared by threads.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gym::python_compat {

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

  // Throws PyRegexError (errors.h) when the pattern does not compile.
  explicit PyRegex(std::string_view pattern, unsigned flags = kNone);
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

}  // namespace gym::python_compat
