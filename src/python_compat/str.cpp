#include "python_compat/str.h"

#include "python_compat/utf8.h"

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <locale.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>

namespace gym::python_compat {

namespace {

template <typename Pred>
std::string_view strip_view(std::string_view s, bool left, bool right, Pred strip_it) {
  std::size_t begin = 0;
  std::size_t end = s.size();
  if (left) {
    while (begin < end) {
      std::size_t next = begin;
      if (!strip_it(next_code_point(s, next))) break;
      begin = next;
    }
  }
  if (right) {
    while (end > begin) {
      std::size_t prev = end;
      if (!strip_it(prev_code_point(s, prev))) break;
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
    case U'\n':
    case U'\r':
    case U'\v':
    case U'\f':
    case U'\x1c':
    case U'\x1d':
    case U'\x1e':
    case U'\x85':
    case U'\u2028':
    case U'\u2029':
      return true;
    default:
      return false;
  }
}

bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::string py_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < s.size();) {
    char32_t c = next_code_point(s, i);
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
      bool printable = c == U' ' || !(type == U_CONTROL_CHAR || type == U_FORMAT_CHAR ||
                                      type == U_SURROGATE || type == U_PRIVATE_USE_CHAR ||
                                      type == U_UNASSIGNED || type == U_LINE_SEPARATOR ||
                                      type == U_PARAGRAPH_SEPARATOR || type == U_SPACE_SEPARATOR);
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

bool py_isspace(char32_t c) {
  auto cp = static_cast<UChar32>(c);
  if (u_charType(cp) == U_SPACE_SEPARATOR) return true;
  auto dir = u_charDirection(cp);
  return dir == U_WHITE_SPACE_NEUTRAL || dir == U_BLOCK_SEPARATOR || dir == U_SEGMENT_SEPARATOR;
}

std::size_t py_len(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++n) next_code_point(s, i);
  return n;
}

std::u32string py_code_points(std::string_view s) {
  std::u32string out;
  for (std::size_t i = 0; i < s.size();) out += next_code_point(s, i);
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
  return std::string(
      strip_view(s, true, true, [&](char32_t c) { return set.find(c) != std::u32string::npos; }));
}

std::string py_rstrip_chars(std::string_view s, std::string_view chars) {
  auto set = py_code_points(chars);
  return std::string(
      strip_view(s, false, true, [&](char32_t c) { return set.find(c) != std::u32string::npos; }));
}

std::vector<std::string> py_split(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  std::size_t word_start = std::string_view::npos;
  while (i < s.size()) {
    std::size_t at = i;
    bool space = py_isspace(next_code_point(s, i));
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
    char32_t c = next_code_point(s, i);
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
    if (!u_isalpha(static_cast<UChar32>(next_code_point(s, i)))) return false;
  return true;
}

bool py_isupper(std::string_view s) {
  bool cased = false;
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<UChar32>(next_code_point(s, i));
    if (u_isULowercase(c) || u_charType(c) == U_TITLECASE_LETTER) return false;
    cased = cased || u_isUUppercase(c);
  }
  return cased;
}

std::string_view py_unicode_category(char32_t c) {
  // Indexed by ICU's UCharCategory.
  static constexpr std::string_view kNames[U_CHAR_CATEGORY_COUNT] = {
      "Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Me", "Mc", "Nd", "Nl", "No", "Zs", "Zl", "Zp",
      "Cc", "Cf", "Co", "Cs", "Pd", "Ps", "Pe", "Pc", "Po", "Sm", "Sc", "Sk", "So", "Pi", "Pf"};
  auto type = u_charType(static_cast<UChar32>(c));
  return type >= 0 && type < U_CHAR_CATEGORY_COUNT ? kNames[type] : "Cn";
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
    char32_t c = next_code_point(trimmed, i);
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

}  // namespace gym::python_compat
