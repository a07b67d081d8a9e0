#include "http/session_cookie.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <boost/json.hpp>

#include <array>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

namespace gym::http {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// The value of each base64url character, -1 for the others.
constexpr std::array<std::int8_t, 256> kDecodeTable = [] {
  std::array<std::int8_t, 256> table{};
  table.fill(-1);
  for (std::size_t i = 0; i < kAlphabet.size(); ++i)
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
  return table;
}();

using MacContext = std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)>;

}  // namespace

std::string base64url_encode(std::string_view bytes) {
  // Written in place, 3 bytes to 4 characters: no per-character push_back.
  std::string out((bytes.size() * 4 + 2) / 3, '\0');
  const auto* in = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t whole = bytes.size() - bytes.size() % 3;
  char* o = out.data();
  for (std::size_t i = 0; i < whole; i += 3) {
    const std::uint32_t v =
        (std::uint32_t{in[i]} << 16) | (std::uint32_t{in[i + 1]} << 8) | in[i + 2];
    *o++ = kAlphabet[v >> 18];
    *o++ = kAlphabet[(v >> 12) & 0x3f];
    *o++ = kAlphabet[(v >> 6) & 0x3f];
    *o++ = kAlphabet[v & 0x3f];
  }
  if (const std::size_t rest = bytes.size() - whole; rest > 0) {
    std::uint32_t v = std::uint32_t{in[whole]} << 16;
    if (rest == 2) v |= std::uint32_t{in[whole + 1]} << 8;
    *o++ = kAlphabet[v >> 18];
    *o++ = kAlphabet[(v >> 12) & 0x3f];
    if (rest == 2) *o++ = kAlphabet[(v >> 6) & 0x3f];
  }
  return out;  // unpadded
}

std::optional<std::string> base64url_decode(std::string_view text) {
  // Everything from the first '=' on is ignored. Four characters to three bytes at a time, with
  // a table lookup per character instead of a search of the alphabet.
  text = text.substr(0, text.find('='));
  std::string out(text.size() * 6 / 8, '\0');
  char* o = out.data();
  const auto value = [&](std::size_t i) -> std::int32_t {
    return kDecodeTable[static_cast<unsigned char>(text[i])];
  };
  const std::size_t whole = text.size() - text.size() % 4;
  for (std::size_t i = 0; i < whole; i += 4) {
    const std::int32_t a = value(i), b = value(i + 1), c = value(i + 2), d = value(i + 3);
    if ((a | b | c | d) < 0) return std::nullopt;  // one of them is not base64url
    const std::uint32_t v = static_cast<std::uint32_t>((a << 18) | (b << 12) | (c << 6) | d);
    *o++ = static_cast<char>(v >> 16);
    *o++ = static_cast<char>((v >> 8) & 0xff);
    *o++ = static_cast<char>(v & 0xff);
  }
  // 1 to 3 characters left: 6 (no whole byte), 12 or 18 bits.
  std::int32_t rest = 0;
  std::uint32_t v = 0;
  for (std::size_t i = whole; i < text.size(); ++i) {
    rest |= value(i);
    v = (v << 6) | static_cast<std::uint32_t>(value(i) & 0x3f);
  }
  if (rest < 0) return std::nullopt;
  if (text.size() - whole == 2) *o++ = static_cast<char>(v >> 4);
  if (text.size() - whole == 3) {
    *o++ = static_cast<char>(v >> 10);
    *o++ = static_cast<char>((v >> 2) & 0xff);
  }
  return out;
}

std::string new_uuid4() {
  std::array<unsigned char, 16> b{};
  if (RAND_bytes(b.data(), static_cast<int>(b.size())) != 1)
    throw std::runtime_error("RAND_bytes failed");
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s.push_back(kHex[b[i] >> 4]);
    s.push_back(kHex[b[i] & 0xf]);
  }
  return s;
}

std::string new_session_key() {
  std::array<unsigned char, 32> b{};
  if (RAND_bytes(b.data(), static_cast<int>(b.size())) != 1)
    throw std::runtime_error("RAND_bytes failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (unsigned char c : b) {
    s.push_back(kHex[c >> 4]);
    s.push_back(kHex[c & 0xf]);
  }
  return s;
}

const std::string& process_session_key() {
  static const std::string key = [] {
    const char* given = std::getenv(kSessionKeyVariable);
    return given && *given ? std::string(given) : new_session_key();
  }();
  return key;
}

bool is_valid_session_id(std::string_view id) {
  if (id.empty() || id.size() > 128 || id == "." || id == "..") return false;
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' ||
          c == '-'))
      return false;
  return true;
}

SessionCookie::SessionCookie(std::string cookie_name, std::string key)
    : name_(std::move(cookie_name)) {
  EVP_MAC* hmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (!hmac) throw std::runtime_error("SessionCookie: OpenSSL has no HMAC");
  MacContext ctx(EVP_MAC_CTX_new(hmac), &EVP_MAC_CTX_free);
  EVP_MAC_free(hmac);  // the context holds its own reference
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_END};
  if (!ctx || EVP_MAC_init(ctx.get(), reinterpret_cast<const unsigned char*>(key.data()),
                           key.size(), params) != 1)
    throw std::runtime_error("SessionCookie: cannot key HMAC-SHA256");
  OPENSSL_cleanse(key.data(), key.size());  // the context keeps what it needs
  keyed_ = std::shared_ptr<const EVP_MAC_CTX>(
      ctx.release(), [](const EVP_MAC_CTX* c) { EVP_MAC_CTX_free(const_cast<EVP_MAC_CTX*>(c)); });
}

std::string SessionCookie::mac(std::string_view payload) const {
  // A copy of the keyed context per MAC: the shared one is only read, so this is thread-safe.
  MacContext ctx(EVP_MAC_CTX_dup(keyed_.get()), &EVP_MAC_CTX_free);
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  std::size_t length = 0;
  const auto update = [&](std::string_view part) {
    return EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(part.data()),
                          part.size()) == 1;
  };
  if (!ctx || !update(name_) || !update(".") || !update(payload) ||
      EVP_MAC_final(ctx.get(), out.data(), &length, out.size()) != 1)
    throw std::runtime_error("SessionCookie: HMAC-SHA256 failed");
  return std::string(reinterpret_cast<const char*>(out.data()), length);
}

std::string SessionCookie::sign(std::string_view session_id) const {
  boost::json::object o;
  o["session_id"] = session_id;
  std::string payload = base64url_encode(boost::json::serialize(o));
  return payload + "." + base64url_encode(mac(payload));
}

std::optional<std::string> SessionCookie::verify(std::string_view value) const {
  auto dot = value.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto payload = value.substr(0, dot);
  // The cookie name is signed too: one deployment key, but a cookie of one server is no
  // session of another.
  auto expected = base64url_encode(mac(payload));
  auto given = value.substr(dot + 1);
  if (given.size() != expected.size() ||
      CRYPTO_memcmp(given.data(), expected.data(), expected.size()) != 0)
    return std::nullopt;
  auto decoded = base64url_decode(payload);
  if (!decoded) return std::nullopt;
  boost::system::error_code ec;
  auto v = boost::json::parse(*decoded, ec);
  if (ec || !v.is_object()) return std::nullopt;
  auto* id = v.get_object().if_contains("session_id");
  if (!id || !id->is_string() || !is_valid_session_id(id->get_string())) return std::nullopt;
  return std::string(id->get_string());
}

std::string SessionCookie::set_cookie_header(std::string_view session_id) const {
  return name_ + "=" + sign(session_id) + "; Path=/; Max-Age=1209600; HttpOnly; SameSite=lax";
}

}  // namespace gym::http
