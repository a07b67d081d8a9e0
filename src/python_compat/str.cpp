#include "servers/python_compat.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <boost/json.hpp>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/locid.h>
#include <unicode/unistr.h>
#include <unicode/utf8.h>

#include <locale.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

namespace gym::servers {
namespace json = boost::json;

namespace {

// ---- UTF-8 walking ---------------------------------------------------------------------------

// The code point at byte `i` (advancing `i`); an invalid sequence yields U+FFFD for one byte.
char32_t next_cp(std::string_view s, std::size_t& i) {
  UChar32 c = 0;
  auto len = static_cast<std::int32_t>(s.size());
  auto pos = static_cast<std::int32_t>(i);
  U8_NEXT(reinterpret_cast<const std::uint8_t*>(s.data()), pos, len, c);
  i = static_cast<std::size_t>(pos);
  return c < 0 ? U'\uFFFD' : static_cast<char32_t>(c);
}

// The code point ending at byte `i` (moving `i` back to its first byte).
char32_t prev_cp(std::string_view s, std::size_t& i) {
  UChar32 c = 0;
  auto pos = static_cast<std::int32_t>(i);
  U8_PREV(reinterpret_cast<const std::uint8_t*>(s.data()), 0, pos, c);
  i = static_cast<std::size_t>(pos);
  return c < 0 ? U'\uFFFD' : static_cast<char32_t>(c);
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

template <typename Pred>
std::string_view strip_view(std::string_view s, bool left, bool right, Pred strip_it) {
  std::size_t begin = 0;
  std::size_t end = s.size();
  if (left) {
    while (begin < end) {
      std::size_t next = begin;
      if (!strip_it(next_cp(s, next))) break;
      begin = next;
    }
  }
  if (right) {
    while (end > begin) {
      std::size_t prev = end;
      if (!strip_it(prev_cp(s, prev))) break;
      end = prev;
    }
  }
  return s.substr(begin, end - begin);
}

icu::UnicodeString to_icu(std::string_view s) {
  return icu::UnicodeString::fromUTF8(
      icu::StringPiece(s.data(), static_cast<std::int32_t>(s.size())));
}

std::string from_icu(const icu::UnicodeString& u) {
  std::string out;
  u.toUTF8String(out);
  return out;
}

bool is_line_break(char32_t c) {
  switch (c) {
    case U'\n': case U'\r': case U'\v': case U'\f': case U'\x1c': case U'\x1d': case U'\x1e':
    case U'\x85': case U'\u2028': case U'\u2029':
      return true;
    default:
      return false;
  }
}

bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

// ---- exceptions ------------------------------------------------------------------------------

std::string py_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < s.size();) {
    char32_t c = next_cp(s, i);
    if (c == static_cast<char32_t>(quote) || c == U'\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == U'\n') {
      out += "\\n";
    } else if (c == U'\r') {
      out += "\\r";
    } else if (c == U'\t') {
      out += "\\t";
    } else {
      auto type = u_charType(static_cast<UChar32>(c));
      bool printable = c == U' ' ||
                       !(type == U_CONTROL_CHAR || type == U_FORMAT_CHAR || type == U_SURROGATE ||
                         type == U_PRIVATE_USE_CHAR || type == U_UNASSIGNED ||
                         type == U_LINE_SEPARATOR || type == U_PARAGRAPH_SEPARATOR ||
                         type == U_SPACE_SEPARATOR);
      if (printable) {
        append_utf8(out, c);
      } else if (c < 0x100) {
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 15];
      } else {
        int digits = c < 0x10000 ? 4 : 8;
        out += digits == 4 ? "\\u" : "\\U";
        for (int d = digits - 1; d >= 0; --d) out += kHex[(c >> (4 * d)) & 15];
      }
    }
  }
  out += quote;
  return out;
}

// ---- str -------------------------------------------------------------------------------------

bool py_isspace(char32_t c) {
  auto cp = static_cast<UChar32>(c);
  if (u_charType(cp) == U_SPACE_SEPARATOR) return true;
  auto dir = u_charDirection(cp);
  return dir == U_WHITE_SPACE_NEUTRAL || dir == U_BLOCK_SEPARATOR || dir == U_SEGMENT_SEPARATOR;
}

std::size_t py_len(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++n) next_cp(s, i);
  return n;
}

std::u32string py_code_points(std::string_view s) {
  std::u32string out;
  for (std::size_t i = 0; i < s.size();) out += next_cp(s, i);
  return out;
}

std::string py_strip(std::string_view s) {
  return std::string(strip_view(s, true, true, py_isspace));
}

std::string py_lstrip(std::string_view s) {
  return std::string(strip_view(s, true, false, py_isspace));
}

std::string py_rstrip(std::string_view s) {
  return std::string(strip_view(s, false, true, py_isspace));
}

std::string py_strip_chars(std::string_view s, std::string_view chars) {
  auto set = py_code_points(chars);
  return std::string(strip_view(s, true, true, [&](char32_t c) {
    return set.find(c) != std::u32string::npos;
  }));
}

std::string py_rstrip_chars(std::string_view s, std::string_view chars) {
  auto set = py_code_points(chars);
  return std::string(strip_view(s, false, true, [&](char32_t c) {
    return set.find(c) != std::u32string::npos;
  }));
}

std::vector<std::string> py_split(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  std::size_t word_start = std::string_view::npos;
  while (i < s.size()) {
    std::size_t at = i;
    bool space = py_isspace(next_cp(s, i));
    if (space && word_start != std::string_view::npos) {
      out.emplace_back(s.substr(word_start, at - word_start));
      word_start = std::string_view::npos;
    } else if (!space && word_start == std::string_view::npos) {
      word_start = at;
    }
  }
  if (word_start != std::string_view::npos) out.emplace_back(s.substr(word_start));
  return out;
}

std::string py_collapse_whitespace(std::string_view s) {
  std::string out;
  for (const auto& w : py_split(s)) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

std::vector<std::string> py_splitlines(std::string_view s) {
  std::vector<std::string> out;
  std::size_t line_start = 0;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t at = i;
    char32_t c = next_cp(s, i);
    if (!is_line_break(c)) continue;
    out.emplace_back(s.substr(line_start, at - line_start));
    if (c == U'\r' && i < s.size() && s[i] == '\n') ++i;
    line_start = i;
  }
  if (line_start < s.size()) out.emplace_back(s.substr(line_start));
  return out;
}

std::string py_lower(std::string_view s) {
  auto u = to_icu(s);
  u.toLower(icu::Locale::getRoot());
  return from_icu(u);
}

std::string py_upper(std::string_view s) {
  auto u = to_icu(s);
  u.toUpper(icu::Locale::getRoot());
  return from_icu(u);
}

std::string py_nfkc(std::string_view s) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfkc = icu::Normalizer2::getNFKCInstance(status);
  if (U_FAILURE(status)) throw std::runtime_error("ICU NFKC normaliser unavailable");
  auto out = nfkc->normalize(to_icu(s), status);
  if (U_FAILURE(status)) throw std::runtime_error("ICU NFKC normalisation failed");
  return from_icu(out);
}

bool py_isalpha(std::string_view s) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size();)
    if (!u_isalpha(static_cast<UChar32>(next_cp(s, i)))) return false;
  return true;
}

std::string py_replace(std::string_view s, std::string_view old_text, std::string_view new_text) {
  if (old_text.empty()) throw std::invalid_argument("py_replace: empty pattern");
  std::string out;
  std::size_t pos = 0;
  while (true) {
    auto hit = s.find(old_text, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(new_text);
    pos = hit + old_text.size();
  }
  out.append(s.substr(pos));
  return out;
}

std::optional<double> py_float(std::string_view s) {
  // Like float(): Unicode digits become ASCII, other non-ASCII characters are invalid.
  std::string_view trimmed = strip_view(s, true, true, py_isspace);
  std::string ascii;
  for (std::size_t i = 0; i < trimmed.size();) {
    char32_t c = next_cp(trimmed, i);
    if (c < 0x80) {
      ascii += static_cast<char>(c);
    } else if (u_charType(static_cast<UChar32>(c)) == U_DECIMAL_DIGIT_NUMBER) {
      ascii += static_cast<char>('0' + u_charDigitValue(static_cast<UChar32>(c)));
    } else {
      return std::nullopt;
    }
  }
  // Underscores only between digits, then dropped.
  std::string text;
  for (std::size_t i = 0; i < ascii.size(); ++i) {
    if (ascii[i] != '_') {
      text += ascii[i];
      continue;
    }
    if (i == 0 || i + 1 == ascii.size() || !is_ascii_digit(ascii[i - 1]) ||
        !is_ascii_digit(ascii[i + 1]))
      return std::nullopt;
  }
  std::size_t p = 0;
  bool negative = false;
  if (p < text.size() && (text[p] == '+' || text[p] == '-')) negative = text[p++] == '-';
  std::string rest = text.substr(p);
  std::string lowered = rest;
  for (auto& ch : lowered) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lowered == "inf" || lowered == "infinity")
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  if (lowered == "nan") return std::numeric_limits<double>::quiet_NaN();
  // [digits][.digits][e[sign]digits], with digits on at least one side of the point.
  std::size_t q = 0;
  std::size_t int_digits = 0;
  std::size_t frac_digits = 0;
  while (q < rest.size() && is_ascii_digit(rest[q])) ++q, ++int_digits;
  if (q < rest.size() && rest[q] == '.') {
    ++q;
    while (q < rest.size() && is_ascii_digit(rest[q])) ++q, ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return std::nullopt;
  if (q < rest.size() && (rest[q] == 'e' || rest[q] == 'E')) {
    ++q;
    if (q < rest.size() && (rest[q] == '+' || rest[q] == '-')) ++q;
    std::size_t exp_digits = 0;
    while (q < rest.size() && is_ascii_digit(rest[q])) ++q, ++exp_digits;
    if (exp_digits == 0) return std::nullopt;
  }
  if (q != rest.size()) return std::nullopt;
  // strtod in the C locale rounds correctly and overflows to inf / underflows to 0 like Python.
  static const locale_t c_locale = ::newlocale(LC_ALL_MASK, "C", nullptr);
  double value = ::strtod_l(rest.c_str(), nullptr, c_locale);
  return negative ? -value : value;
}

// ---- re --------------------------------------------------------------------------------------

struct PyRegex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

namespace {

// Python spellings PCRE2 reads differently (see the header).
std::string translate_pattern(std::string_view p) {
  static constexpr std::string_view kExtraSpace = "\\x{1c}-\\x{1f}";
  std::string out;
  bool in_set = false;
  std::size_t set_start = 0;  // index of the first character inside the set
  for (std::size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char n = p[i + 1];
      ++i;
      if (!in_set && n == 'Z') {
        out += "\\z";
      } else if (n == 's') {
        out += in_set ? "\\s" + std::string(kExtraSpace) : "[\\s" + std::string(kExtraSpace) + "]";
      } else if (!in_set && n == 'S') {
        out += "[^\\s" + std::string(kExtraSpace) + "]";
      } else {
        out += '\\';
        out += n;
      }
      continue;
    }
    if (!in_set && c == '[') {
      in_set = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      set_start = i + 1;
      continue;
    }
    if (in_set && c == ']' && i != set_start) in_set = false;
    out += c;
  }
  return out;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  int n = pcre2_get_error_message(code, buffer, sizeof buffer);
  return n < 0 ? "PCRE2 error " + std::to_string(code)
               : std::string(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n));
}

}  // namespace

PyMatch::PyMatch(std::string_view subject, std::vector<std::pair<std::size_t, std::size_t>> spans)
    : subject_(subject), spans_(std::move(spans)) {}

bool PyMatch::matched(std::size_t group) const {
  return group < spans_.size() && spans_[group].first != kUnset;
}

std::size_t PyMatch::start(std::size_t group) const { return spans_.at(group).first; }
std::size_t PyMatch::end(std::size_t group) const { return spans_.at(group).second; }

std::string_view PyMatch::group(std::size_t group) const {
  if (!matched(group)) return {};
  return subject_.substr(spans_[group].first, spans_[group].second - spans_[group].first);
}

PyRegex::PyRegex(std::string_view pattern, unsigned flags) : code_(std::make_unique<Code>()) {
  std::uint32_t options = PCRE2_UTF | PCRE2_UCP;
  if (flags & kIgnoreCase) options |= PCRE2_CASELESS;
  if (flags & kDotAll) options |= PCRE2_DOTALL;
  if (flags & kMultiline) options |= PCRE2_MULTILINE;
  auto translated = translate_pattern(pattern);
  pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
  pcre2_set_newline(context, PCRE2_NEWLINE_LF);
  int error = 0;
  PCRE2_SIZE offset = 0;
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                              options, &error, &offset, context);
  pcre2_compile_context_free(context);
  if (!code_->code)
    throw PyRegexError(pcre2_message(error) + " at position " + std::to_string(offset));
  std::uint32_t count = 0;
  pcre2_pattern_info(code_->code, PCRE2_INFO_CAPTURECOUNT, &count);
  groups_ = count;
}

PyRegex::~PyRegex() = default;
PyRegex::PyRegex(PyRegex&&) noexcept = default;
PyRegex& PyRegex::operator=(PyRegex&&) noexcept = default;

std::optional<PyMatch> PyRegex::run(std::string_view text, std::size_t pos,
                                    unsigned options) const {
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(code_->code, nullptr), &pcre2_match_data_free);
  int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos,
                       options, data.get(), nullptr);
  if (rc == PCRE2_ERROR_NOMATCH) return std::nullopt;
  if (rc < 0) throw std::runtime_error("regular expression match failed: " + pcre2_message(rc));
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
  std::vector<std::pair<std::size_t, std::size_t>> spans(groups_ + 1);
  for (std::size_t g = 0; g <= groups_; ++g) {
    if (static_cast<int>(g) < rc && ovector[2 * g] != PCRE2_UNSET) {
      spans[g] = {ovector[2 * g], ovector[2 * g + 1]};
    } else {
      spans[g] = {static_cast<std::size_t>(-1), static_cast<std::size_t>(-1)};
    }
  }
  return PyMatch(text, std::move(spans));
}

std::optional<PyMatch> PyRegex::search(std::string_view text, std::size_t pos) const {
  if (pos > text.size()) return std::nullopt;
  return run(text, pos, 0);
}

std::optional<PyMatch> PyRegex::match(std::string_view text) const {
  return run(text, 0, PCRE2_ANCHORED);
}

std::optional<PyMatch> PyRegex::fullmatch(std::string_view text) const {
  return run(text, 0, PCRE2_ANCHORED | PCRE2_ENDANCHORED);
}

std::vector<PyMatch> PyRegex::finditer(std::string_view text) const {
  std::vector<PyMatch> out;
  std::size_t pos = 0;
  bool last_empty = false;
  while (pos <= text.size()) {
    // After an empty match the next one may start at the same place only if it is not empty.
    auto m = run(text, pos, last_empty ? PCRE2_NOTEMPTY_ATSTART : 0);
    if (!m) break;
    last_empty = m->start() == m->end();
    pos = m->end();
    out.push_back(std::move(*m));
  }
  return out;
}

std::vector<std::string> PyRegex::findall(std::string_view text) const {
  if (groups_ > 1) throw std::logic_error("findall with several groups returns tuples");
  std::vector<std::string> out;
  for (const auto& m : finditer(text)) out.emplace_back(m.group(groups_ == 1 ? 1 : 0));
  return out;
}

std::string PyRegex::sub(std::string_view replacement, std::string_view text) const {
  std::string out;
  std::size_t copied = 0;
  for (const auto& m : finditer(text)) {
    out.append(text.substr(copied, m.start() - copied));
    for (std::size_t i = 0; i < replacement.size(); ++i) {
      char c = replacement[i];
      if (c != '\\' || i + 1 == replacement.size()) {
        out += c;
        continue;
      }
      char n = replacement[++i];
      if (n == '\\') {
        out += '\\';
      } else if (is_ascii_digit(n) && n != '0') {
        std::size_t group = static_cast<std::size_t>(n - '0');
        if (i + 1 < replacement.size() && is_ascii_digit(replacement[i + 1]) &&
            group * 10 + static_cast<std::size_t>(replacement[i + 1] - '0') <= groups_)
          group = group * 10 + static_cast<std::size_t>(replacement[++i] - '0');
        if (group > groups_) throw PyRegexError("invalid group reference " + std::to_string(group));
        out.append(m.group(group));
      } else {
        throw std::logic_error(std::string("unsupported escape in replacement: \\") + n);
      }
    }
    copied = m.end();
  }
  out.append(text.substr(copied));
  return out;
}

// ---- json ------------------------------------------------------------------------------------

namespace {

// A parser with the grammar and messages of CPython's json scanner.
class PyJsonParser {
 public:
  explicit PyJsonParser(std::string_view text) : s_(text) {}

  json::value parse() {
    if (s_.starts_with("\xEF\xBB\xBF")) fail("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0);
    skip_ws();
    json::value v = value(0);
    skip_ws();
    if (i_ != s_.size()) fail("Extra data", i_);
    return v;
  }

 private:
  static constexpr int kMaxDepth = 1000;

  [[noreturn]] void fail(std::string_view what, std::size_t at) const {
    // Python reports code-point positions.
    std::size_t pos = py_len(s_.substr(0, at));
    std::size_t line = 1;
    std::size_t last_newline = std::string_view::npos;
    for (std::size_t k = 0; k < at; ++k) {
      if (s_[k] == '\n') {
        ++line;
        last_newline = k;
      }
    }
    std::size_t column = last_newline == std::string_view::npos
                             ? pos + 1
                             : pos - py_len(s_.substr(0, last_newline + 1)) + 1;
    throw JSONDecodeError(std::string(what) + ": line " + std::to_string(line) + " column " +
                          std::to_string(column) + " (char " + std::to_string(pos) + ")");
  }

  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }

  bool consume(std::string_view word) {
    if (s_.substr(i_).starts_with(word)) {
      i_ += word.size();
      return true;
    }
    return false;
  }

  json::value value(int depth) {
    if (i_ >= s_.size()) fail("Expecting value", i_);
    char c = s_[i_];
    if (c == '"') return json::value(string());
    if (c == '{') return object(depth + 1);
    if (c == '[') return array(depth + 1);
    if (consume("null")) return nullptr;
    if (consume("true")) return true;
    if (consume("false")) return false;
    if (consume("NaN")) return std::numeric_limits<double>::quiet_NaN();
    if (consume("Infinity")) return std::numeric_limits<double>::infinity();
    if (consume("-Infinity")) return -std::numeric_limits<double>::infinity();
    if (c == '-' || is_ascii_digit(c)) return number();
    fail("Expecting value", i_);
  }

  json::value number() {
    std::size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ >= s_.size() || !is_ascii_digit(s_[i_])) fail("Expecting value", start);
    if (s_[i_] == '0') {
      ++i_;
    } else {
      while (i_ < s_.size() && is_ascii_digit(s_[i_])) ++i_;
    }
    bool is_float = false;
    if (i_ + 1 < s_.size() && s_[i_] == '.' && is_ascii_digit(s_[i_ + 1])) {
      is_float = true;
      i_ += 2;
      while (i_ < s_.size() && is_ascii_digit(s_[i_])) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      std::size_t e = i_ + 1;
      if (e < s_.size() && (s_[e] == '+' || s_[e] == '-')) ++e;
      if (e < s_.size() && is_ascii_digit(s_[e])) {
        is_float = true;
        while (e < s_.size() && is_ascii_digit(s_[e])) ++e;
        i_ = e;
      }
    }
    std::string text(s_.substr(start, i_ - start));
    if (!is_float) {
      errno = 0;
      if (text[0] == '-') {
        long long v = std::strtoll(text.c_str(), nullptr, 10);
        if (errno != ERANGE) return static_cast<std::int64_t>(v);
      } else {
        unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
        if (errno != ERANGE) {
          if (v <= static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max()))
            return static_cast<std::int64_t>(v);
          return static_cast<std::uint64_t>(v);
        }
      }
    }
    return *py_float(text);
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Four hex digits at `at` (the "u" is at at-1); fails like Python otherwise.
  char32_t hex4(std::size_t at) {
    if (at + 4 > s_.size()) fail("Invalid \\uXXXX escape", at - 1);
    char32_t v = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      int h = hex_value(s_[at + k]);
      if (h < 0) fail("Invalid \\uXXXX escape", at - 1);
      v = v * 16 + static_cast<char32_t>(h);
    }
    return v;
  }

  std::string string() {
    std::size_t begin = i_++;  // the opening quote
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("Unterminated string starting at", begin);
      char c = s_[i_];
      if (c == '"') {
        ++i_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("Invalid control character at", i_);
      if (c != '\\') {
        out += c;
        ++i_;
        continue;
      }
      if (i_ + 1 >= s_.size()) fail("Unterminated string starting at", begin);
      char e = s_[i_ + 1];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          char32_t cp = hex4(i_ + 2);
          std::size_t after = i_ + 6;
          if (cp >= 0xD800 && cp <= 0xDBFF && after + 1 < s_.size() && s_[after] == '\\' &&
              s_[after + 1] == 'u') {
            char32_t low = hex4(after + 2);
            if (low >= 0xDC00 && low <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
              after += 6;
            }
          }
          if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;  // lone surrogate
          append_utf8(out, cp);
          i_ = after;
          continue;
        }
        default:
          fail("Invalid \\escape", i_);
      }
      i_ += 2;
    }
  }

  json::value object(int depth) {
    if (depth > kMaxDepth)
      throw RecursionError("maximum recursion depth exceeded while decoding a JSON object");
    ++i_;  // {
    json::object obj;
    skip_ws();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return obj;
    }
    while (true) {
      if (i_ >= s_.size() || s_[i_] != '"')
        fail("Expecting property name enclosed in double quotes", i_);
      std::string key = string();
      skip_ws();
      if (i_ >= s_.size() || s_[i_] != ':') fail("Expecting ':' delimiter", i_);
      ++i_;
      skip_ws();
      obj.insert_or_assign(key, value(depth));  // a repeated key keeps its first position
      skip_ws();
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return obj;
      }
      if (i_ >= s_.size() || s_[i_] != ',') fail("Expecting ',' delimiter", i_);
      ++i_;
      skip_ws();
    }
  }

  json::value array(int depth) {
    if (depth > kMaxDepth)
      throw RecursionError("maximum recursion depth exceeded while decoding a JSON array");
    ++i_;  // [
    json::array arr;
    skip_ws();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return arr;
    }
    while (true) {
      arr.push_back(value(depth));
      skip_ws();
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return arr;
      }
      if (i_ >= s_.size() || s_[i_] != ',') fail("Expecting ',' delimiter", i_);
      ++i_;
      skip_ws();
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

bool is_number(const json::value& v) { return v.is_number() || v.is_bool(); }

// Python compares int and float exactly: 2**53 + 1 != 2.0**53.
bool int_equals_double(const json::value& i, double d) {
  if (!std::isfinite(d) || d != std::trunc(d)) return false;
  if (i.is_int64()) {
    if (d < -9223372036854775808.0 || d >= 9223372036854775808.0) return false;
    return static_cast<std::int64_t>(d) == i.get_int64();
  }
  if (d < 0 || d >= 18446744073709551616.0) return false;
  return static_cast<std::uint64_t>(d) == i.get_uint64();
}

json::value bool_as_int(const json::value& v) {
  return v.is_bool() ? json::value(static_cast<std::int64_t>(v.get_bool())) : v;
}

bool numbers_equal(const json::value& a0, const json::value& b0) {
  json::value a = bool_as_int(a0);
  json::value b = bool_as_int(b0);
  if (a.is_double() && b.is_double()) return a.get_double() == b.get_double();
  if (a.is_double()) return int_equals_double(b, a.get_double());
  if (b.is_double()) return int_equals_double(a, b.get_double());
  if (a.is_int64() && b.is_int64()) return a.get_int64() == b.get_int64();
  if (a.is_uint64() && b.is_uint64()) return a.get_uint64() == b.get_uint64();
  // One int64 and one uint64: a uint64 above INT64_MAX never equals an int64.
  const json::value& s = a.is_int64() ? a : b;
  const json::value& u = a.is_int64() ? b : a;
  return s.get_int64() >= 0 && static_cast<std::uint64_t>(s.get_int64()) == u.get_uint64();
}

}  // namespace

json::value py_json_loads(std::string_view text) { return PyJsonParser(text).parse(); }

// ---- == --------------------------------------------------------------------------------------

bool py_equal(const json::value& a, const json::value& b) {
  if (is_number(a) || is_number(b)) return is_number(a) && is_number(b) && numbers_equal(a, b);
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case json::kind::null: return true;
    case json::kind::string: return a.get_string() == b.get_string();
    case json::kind::array: {
      const auto& x = a.get_array();
      const auto& y = b.get_array();
      if (x.size() != y.size()) return false;
      for (std::size_t k = 0; k < x.size(); ++k)
        if (!py_equal(x[k], y[k])) return false;
      return true;
    }
    case json::kind::object: {
      const auto& x = a.get_object();
      const auto& y = b.get_object();
      if (x.size() != y.size()) return false;
      for (const auto& kv : x) {
        auto it = y.find(kv.key());
        if (it == y.end() || !py_equal(kv.value(), it->value())) return false;
      }
      return true;
    }
    default: return false;
  }
}

std::string py_type_name(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "NoneType";
    case json::kind::bool_: return "bool";
    case json::kind::int64:
    case json::kind::uint64: return "int";
    case json::kind::double_: return "float";
    case json::kind::string: return "str";
    case json::kind::array: return "list";
    case json::kind::object: return "dict";
  }
  return "object";
}

bool py_hashable(const json::value& v) { return !v.is_array() && !v.is_object(); }

}  // namespace gym::servers
