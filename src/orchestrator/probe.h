#pragma once
// A minimal blocking HTTP GET for readiness and status probes. These never go through the
// process's pooled client (probes do not appear in pool metrics).
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gym::orchestrator {

enum class ProbeOutcome { success, connection_error, timeout, unknown_error };

struct ProbeResult {
  ProbeOutcome outcome = ProbeOutcome::unknown_error;
  int status = 0;     // HTTP status when outcome is success
  std::string body;   // response body when outcome is success
  std::string error;  // what went wrong otherwise
};

using ProbeHeaders = std::vector<std::pair<std::string, std::string>>;

// The longest body a probe takes: a model list, a server's status, a deployment's config are
// far shorter; an endpoint that answers with more (an endless stream) fails the probe instead of
// filling the orchestrator's memory.
inline constexpr std::size_t kMaxProbeBodyBytes = 1u << 20;

// GET http://host:port<path> with `Connection: close` and `headers`; any HTTP answer is a success.
// The answer is read by its framing (Content-Length, chunks, or the close), so a server that keeps
// the connection open still answers; interim 1xx answers are skipped. A body longer than
// `max_body_bytes` is unknown_error "response body from <url> exceeded <n> bytes (the probe's
// limit)"; something else than HTTP is unknown_error "not an HTTP answer".
ProbeResult http_get(const std::string& host, int port, const std::string& path,
                     std::chrono::milliseconds timeout, const ProbeHeaders& headers = {},
                     std::size_t max_body_bytes = kMaxProbeBodyBytes);

// The same over TLS, with the checks of tls_handshake: a refused handshake is unknown_error with
// its reason, as there.
ProbeResult https_get(const std::string& host, int port, const std::string& path,
                      std::chrono::milliseconds timeout, const ProbeHeaders& headers = {},
                      std::size_t max_body_bytes = kMaxProbeBodyBytes);

// A TLS handshake with host:port, verifying the certificate against the system trust store
// (SSL_CERT_FILE) and the host name as the HTTP client does: success once it completes; a
// refused handshake is unknown_error with "TLS handshake with host:port failed: <reason>".
ProbeResult tls_handshake(const std::string& host, int port, std::chrono::milliseconds timeout);

std::string to_string(ProbeOutcome o);

}  // namespace gym::orchestrator
