#pragma once
// Signed session cookies of runtime.md 4.3. The cookie is named `<ServerClass>___<instance>` and
// that name is also the HMAC key, so every worker of a server accepts the others' cookies.
#include <optional>
#include <string>
#include <string_view>

namespace gym::http {

class SessionCookie {
 public:
  explicit SessionCookie(std::string cookie_name) : name_(std::move(cookie_name)) {}

  const std::string& name() const { return name_; }
  // The session id carried by a cookie value, if the value is well-formed and correctly signed.
  std::optional<std::string> verify(std::string_view value) const;
  // A signed cookie value for `session_id`.
  std::string sign(std::string_view session_id) const;
  // The full Set-Cookie header value for `session_id`.
  std::string set_cookie_header(std::string_view session_id) const;

 private:
  std::string name_;
};

std::string new_uuid4();
std::string base64url_encode(std::string_view bytes);
std::optional<std::string> base64url_decode(std::string_view text);

}  // namespace gym::http
