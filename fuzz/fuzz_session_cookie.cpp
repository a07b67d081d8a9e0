// Session cookies: any Cookie header a client sends is parsed, and any cookie value is verified
// and decoded without crashing (payloads behind a valid signature too); a value we signed for a
// valid id always verifies back to it.
#include "http/message.h"
#include "http/session_cookie.h"

#include <openssl/hmac.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

constexpr std::string_view kCookieName = "SimpleResourcesServer___mcqa";
const std::string kKey(64, 'k');

const gym::http::SessionCookie& cookie() {
  static const gym::http::SessionCookie instance(std::string(kCookieName), kKey);
  return instance;
}

// A cookie value carrying `payload` with a valid signature (HMAC-SHA256 of "<name>.<payload>"
// under the key, as the server signs), so the fuzzer reaches the decoding behind the signature
// check, which no forged value passes.
std::string correctly_signed(std::string_view payload) {
  const std::string encoded = gym::http::base64url_encode(payload);
  const std::string data = std::string(kCookieName) + "." + encoded;
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int length = 0;
  HMAC(EVP_sha256(), kKey.data(), static_cast<int>(kKey.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac.data(), &length);
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
