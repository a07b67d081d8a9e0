#include "python_compat/html.h"

#include "python_compat/re.h"
#include "python_compat/utf8.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace gym::python_compat {

namespace {

struct NamedReference {
  std::string_view name;  // as written after '&', with its ';' when the table has one
  std::string_view text;
};

struct NumericReplacement {
  std::uint32_t number;
  std::string_view text;
};

#include "python_compat/html_entities.inc"

std::optional<std::string_view> named_reference(std::string_view name) {
  auto it = std::lower_bound(
      std::begin(kNamedReferences), std::end(kNamedReferences), name,
      [](const NamedReference& ref, std::string_view wanted) { return ref.name < wanted; });
  if (it == std::end(kNamedReferences) || it->name != name) return std::nullopt;
  return it->text;
}

// Code points Python's html module drops (controls and non-characters).
bool dropped_code_point(std::uint32_t c) {
  return (c >= 0x1 && c <= 0x8) || c == 0xB || (c >= 0xE && c <= 0x1F) ||
         (c >= 0x7F && c <= 0x9F) || (c >= 0xFDD0 && c <= 0xFDEF) || (c & 0xFFFE) == 0xFFFE;
}

// The value of a run of digits in `base`, saturating above U+10FFFF (Python's ints do not
// overflow; every such value decodes the same way).
std::uint32_t reference_number(std::string_view digits, unsigned base) {
  constexpr std::uint32_t kPastMax = 0x110000;
  std::uint32_t n = 0;
  for (char d : digits) {
    unsigned v = d >= '0' && d <= '9' ? static_cast<unsigned>(d - '0')
                 : d >= 'a'           ? static_cast<unsigned>(d - 'a' + 10)
                                      : static_cast<unsigned>(d - 'A' + 10);
    n = std::min<std::uint32_t>(kPastMax, n * base + v);
  }
  return n;
}

std::string numeric_reference(std::string_view ref) {  // ref = "#..." without '&'
  bool hex = ref.size() > 1 && (ref[1] == 'x' || ref[1] == 'X');
  std::string_view digits = ref.substr(hex ? 2 : 1);
  while (!digits.empty() && digits.back() == ';') digits.remove_suffix(1);
  std::uint32_t n = reference_number(digits, hex ? 16 : 10);
  for (const auto& r : kNumericReplacements)
    if (r.number == n) return std::string(r.text);
  if ((n >= 0xD800 && n <= 0xDFFF) || n > 0x10FFFF) return "\xEF\xBF\xBD";
  if (dropped_code_point(n)) return "";
  std::string out;
  append_utf8(out, static_cast<char32_t>(n));
  return out;
}

std::string named_or_literal(std::string_view ref) {  // ref = the name without '&'
  if (auto text = named_reference(ref)) return std::string(*text);
  // The longest prefix of at least two code points that is a known name (names are ASCII).
  std::vector<std::size_t> ends;  // byte offset after each code point
  for (std::size_t i = 0; i < ref.size();) {
    next_code_point(ref, i);
    ends.push_back(i);
  }
  for (std::size_t x = ends.size() - 1; x >= 2; --x) {
    std::size_t cut = ends[x - 1];
    if (auto text = named_reference(ref.substr(0, cut)))
      return std::string(*text) + std::string(ref.substr(cut));
  }
  return "&" + std::string(ref);
}

}  // namespace

std::string py_html_unescape(std::string_view s) {
  if (s.find('&') == std::string_view::npos) return std::string(s);
  static const PyRegex reference(R"(&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?))");
  std::string out;
  std::size_t copied = 0;
  for (const auto& m : reference.finditer(s)) {
    out.append(s.substr(copied, m.start() - copied));
    std::string_view ref = m.group(1);
    out += ref.front() == '#' ? numeric_reference(ref) : named_or_literal(ref);
    copied = m.end();
  }
  out.append(s.substr(copied));
  return out;
}

}  // namespace gym::python_compat
