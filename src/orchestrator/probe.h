#pragma once
// A minimal blocking HTTP GET for readiness and status probes. These never go through the
// process's pooled client (telemetry.md 6.7: probes do not appear in pool metrics).
#include <chrono>
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

// GET http://host:port<path> with `Connection: close` and `headers`; any HTTP answer is a success.
ProbeResult http_get(const std::string& host, int port, const std::string& path,
                     std::chrono::milliseconds timeout, const ProbeHeaders& headers = {});

// The same over TLS, with the checks of tls_handshake: a refused handshake is unknown_error with
// its reason, as there.
ProbeResult https_get(const std::string& host, int port, const std::string& path,
                      std::chrono::milliseconds timeout, const ProbeHeaders& headers = {});

// A TLS handshake with host:port, verifying the certificate against the system trust store
// (SSL_CERT_FILE) and the host name as the HTTP client does: success once it completes; a
// refused handshake is unknown_error with "TLS handshake with host:port failed: <reason>".
ProbeResult tls_handshake(const std::string& host, int port, std::chrono::milliseconds timeout);

std::string to_string(ProbeOutcome o);

}  // namespace gym::orchestrator
