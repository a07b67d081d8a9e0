#pragma once
// Signed session cookies (docs/reference/http-server.md#session-cookies). The cookie is named
// `<ServerClass>___<instance>`. Upstream signs with that public name, so anyone who reaches a
// server can forge another session's cookie; gym-cpp signs with a secret key instead: one random
// key per deployment, handed to its servers privately (kSessionKeyVariable), so every worker and
// every restart within the deployment accepts the others' cookies. Clients only echo cookies, so
// this stays wire-compatible.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct evp_mac_ctx_st;  // OpenSSL's EVP_MAC_CTX

namespace gym::http {

// The environment variable that carries a deployment's signing key to its servers.
inline constexpr const char* kSessionKeyVariable = "GYM_SESSION_SIGNING_KEY";

// The key of this process: kSessionKeyVariable when set, else one random key made once per
// process (a server started on its own; its forked workers share it).
const std::string& process_session_key();
// A fresh random key (64 hex digits) for a deployment.
std::string new_session_key();

// A session id we accept from a cookie: 1-128 characters of [A-Za-z0-9._:-], not "." or ".."
// (never empty, path-like or with control characters).
bool is_valid_session_id(std::string_view id);

class SessionCookie {
 public:
  SessionCookie(std::string cookie_name, std::string key);
  // Copies share the keyed context. No move operations: a move copies, so no SessionCookie is
  // ever left without one.
  SessionCookie(const SessionCookie&) = default;
  SessionCookie& operator=(const SessionCookie&) = default;

  const std::string& name() const { return name_; }
  // The session id carried by a cookie value, if the value is well-formed, correctly signed and
  // a valid session id.
  std::optional<std::string> verify(std::string_view value) const;
  // A signed cookie value for `session_id`.
  std::string sign(std::string_view session_id) const;
  // The full Set-Cookie header value for `session_id`.
  std::string set_cookie_header(std::string_view session_id) const;

 private:
  // HMAC-SHA256 of "<name>.<payload>" under the key, raw bytes.
  std::string mac(std::string_view payload) const;

  std::string name_;
  // HMAC-SHA256 keyed once: OpenSSL 3's one-shot HMAC() fetches the algorithm and hashes the
  // key on every call. Never updated after construction, only duplicated per MAC, so copies and
  // threads can share it.
  std::shared_ptr<const evp_mac_ctx_st> keyed_;
};

std::string new_uuid4();
std::string base64url_encode(std::string_view bytes);
std::optional<std::string> base64url_decode(std::string_view text);

}  // namespace gym::http
