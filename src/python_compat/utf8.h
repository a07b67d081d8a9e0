#pragma once
// Walking UTF-8 text by code points, as the str and json helpers do, and decoding bytes that may
// not be UTF-8. Text is UTF-8 in and out; offsets are byte offsets into it.
#include <cstddef>
#include <string>
#include <string_view>

namespace gym::python_compat {

// The code point at byte `i` (advancing `i` past it); an invalid sequence yields U+FFFD.
char32_t next_code_point(std::string_view s, std::size_t& i);

// The code point ending at byte `i` (moving `i` back to its first byte); U+FFFD when invalid.
char32_t prev_code_point(std::string_view s, std::size_t& i);

// Appends the UTF-8 encoding of `c`.
void append_utf8(std::string& out, char32_t c);

// bytes.decode("utf-8", errors="replace"): valid sequences are kept, and each byte that does
// not start a valid sequence (overlong forms, surrogates and code points above U+10FFFF are
// invalid) becomes U+FFFD. Unlike Python, a truncated multi-byte sequence gives one U+FFFD per
// byte, not one for the whole sequence.
std::string utf8_replace_invalid(std::string_view bytes);

}  // namespace gym::python_compat
