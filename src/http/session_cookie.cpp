#include "http/session_cookie.h"

#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <boost/json.hpp>

#include <array>
#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace gym::http {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string hmac_sha256(std::string_view key, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &len);
  return std::string(reinterpret_cast<const char*>(out.data()), len);
}

}  // namespace

std::string base64url_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 0x3f]);
  return out;  // unpadded
}

std::optional<std::string> base64url_decode(std::string_view text) {
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    auto pos = kAlphabet.find(c);
    if (pos == std::string_view::npos) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
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

std::string SessionCookie::sign(std::string_view session_id) const {
  boost::json::object o;
  o["session_id"] = session_id;
  std::string payload = base64url_encode(boost::json::serialize(o));
  return payload + "." + base64url_encode(hmac_sha256(key_, name_ + "." + payload));
}

std::optional<std::string> SessionCookie::verify(std::string_view value) const {
  auto dot = value.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto payload = value.substr(0, dot);
  // The cookie name is signed too: one deployment key, but a cookie of one server is no
  // session of another.
  auto expected = base64url_encode(hmac_sha256(key_, name_ + "." + std::string(payload)));
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
