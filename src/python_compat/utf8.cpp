#include "python_compat/utf8.h"

#include "core/json_text.h"

#include <unicode/utf8.h>

#include <cstdint>

namespace gym::python_compat {

char32_t next_code_point(std::string_view s, std::size_t& i) {
  UChar32 c = 0;
  auto len = static_cast<std::int32_t>(s.size());
  auto pos = static_cast<std::int32_t>(i);
  U8_NEXT(reinterpret_cast<const std::uint8_t*>(s.data()), pos, len, c);
  i = static_cast<std::size_t>(pos);
  return c < 0 ? U'\uFFFD' : static_cast<char32_t>(c);
}

char32_t prev_code_point(std::string_view s, std::size_t& i) {
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

// One implementation for the verifiers and for every JSON text gym writes (core::render_json).
std::string utf8_replace_invalid(std::string_view s) { return core::utf8_replace_invalid(s); }

}  // namespace gym::python_compat
