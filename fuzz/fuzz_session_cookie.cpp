// Session cookies: any Cookie header a client sends is parsed, and any cookie value is verified
// and decoded without crashing (payloads behind a valid signature too); a value we signed for a
// valid id always verifies back to it.
#include "http/message.h"
#include "http/session_cookie.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

namespace {

constexpr std::string_view kCookieName = "SimpleResourcesServer___mcqa";
const std::string kKey(64, 'k');

const gym::http::SessionCookie& cookie() {
  static const gym::http::SessionCookie instance(std::string(kCookieName), kKey);
  return instance;
}

using MacContext = std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)>;

// HMAC-SHA256 under kKey, keyed once (a fetch and key setup per input would be harness cost,
// not the product's).
const EVP_MAC_CTX* keyed_hmac() {
  static const MacContext ctx = [] {
    EVP_MAC* hmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    MacContext c(EVP_MAC_CTX_new(hmac), &EVP_MAC_CTX_free);
    EVP_MAC_free(hmac);
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                 OSSL_PARAM_END};
    if (!c || EVP_MAC_init(c.get(), reinterpret_cast<const unsigned char*>(kKey.data()),
                           kKey.size(), params) != 1)
      std::abort();
    return c;
  }();
  return ctx.get();
}

// A cookie value carrying `payload` with a valid signature (HMAC-SHA256 of "<name>.<payload>"
// under the key, as the server signs), so the fuzzer reaches the decoding behind the signature
// check, which no forged value passes.
std::string correctly_signed(std::string_view payload) {
  const std::string encoded = gym::http::base64url_encode(payload);
  const std::string data = std::string(kCookieName) + "." + encoded;
  const MacContext ctx(EVP_MAC_CTX_dup(keyed_hmac()), &EVP_MAC_CTX_free);
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  std::size_t length = 0;
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  if (!ctx || EVP_MAC_update(ctx.get(), bytes, data.size()) != 1 ||
      EVP_MAC_final(ctx.get(), mac.data(), &length, mac.size()) != 1)
    std::abort();
  return encoded + "." +
         gym::http::base64url_encode(
             std::string_view(reinterpret_cast<const char*>(mac.data()), length));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto& session = cookie();

  // The whole input as a Cookie header, then every value in it as our cookie.
  for (const auto& [name, value] : gym::http::parse_cookie_header(text)) {
    (void)name;
    (void)session.verify(value);
  }
  (void)session.verify(text);
  (void)gym::http::base64url_decode(text);
  // The input as a signed payload: accepted only when it is {"session_id": <valid id>}.
  if (const auto id = session.verify(correctly_signed(text));
      id && !gym::http::is_valid_session_id(*id))
    std::abort();

  // Round trips: base64url of any bytes decodes back, a signed valid id verifies back.
  const auto decoded = gym::http::base64url_decode(gym::http::base64url_encode(text));
  if (!decoded || *decoded != text) std::abort();
  if (gym::http::is_valid_session_id(text)) {
    const auto id = session.verify(session.sign(text));
    if (!id || *id != text) std::abort();
    (void)session.set_cookie_header(text);
  }
  return 0;
}
