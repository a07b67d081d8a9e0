// Secrets masked wherever text leaves a process, and redirects that must not carry them: for
// any input, masking never crashes, never leaves the secret in any spelling it looks for, and is
// stable (masking masked text changes nothing); origins compare as an equivalence.
// The input is "<secret>\n<text>": the text is masked, scanned for URLs, and read as a URL, a
// Location resolved against it, and a command-line word.
#include "core/secrets.h"
#include "http/url.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

// `secret` with every character spelled \uXXXX, as a JSON serializer may echo it.
std::string json_escaped(std::string_view secret) {
  std::string out;
  char buf[8];
  for (unsigned char c : secret) {
    std::snprintf(buf, sizeof buf, "\\u%04x", c);
    out += buf;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto newline = input.find('\n');
  const std::string_view secret = newline == std::string_view::npos ? "" : input.substr(0, newline);
  const std::string_view text =
      newline == std::string_view::npos ? input : input.substr(newline + 1);
  namespace core = gym::core;

  // An echoed secret: gone in every spelling, unless the mask itself can spell it.
  const std::string masked = core::masked_secret(text, secret);
  if (secret.size() >= 4 && secret.find('*') == std::string_view::npos) {
    if (masked.find(secret) != std::string::npos) std::abort();
    // \u00XX spells U+00XX, whose UTF-8 is the byte XX only for ASCII.
    const bool ascii = std::all_of(secret.begin(), secret.end(),
                                   [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    if (ascii && masked.find(json_escaped(secret)) != std::string::npos) std::abort();
    if (core::masked_secret(masked, secret) != masked) std::abort();
  }

  // URLs: masked once is masked for good; a URL without secrets is kept to the byte.
  const std::string url = core::masked_url(text);
  if (core::masked_url(url) != url) std::abort();
  (void)core::masked_urls_in(text);
  (void)core::is_secret_key(text);
  (void)core::is_secret_header(text);
  (void)core::is_secret_query_parameter(text);
  (void)core::secret_override(std::string(text));
  (void)core::masked_command_line({"gym", std::string(secret), std::string(text)});

  // Redirects: an origin is its own, in both directions alike.
  const std::string base(secret);
  const std::string next = gym::http::resolve_location(base, text);
  if (gym::http::same_origin(base, next) != gym::http::same_origin(next, base)) std::abort();
  std::string error;
  if (gym::http::parse_url(base, error) && !gym::http::same_origin(base, base)) std::abort();
  (void)gym::http::origin_of(next);
  (void)gym::http::span_url(next);
  return 0;
}
