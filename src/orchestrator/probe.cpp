#include "orchestrator/probe.h"

#include "http/response_reader.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>

namespace gym::orchestrator {
using Clock = std::chrono::steady_clock;

std::string to_string(ProbeOutcome o) {
  switch (o) {
    case ProbeOutcome::success:
      return "success";
    case ProbeOutcome::connection_error:
      return "connection_error";
    case ProbeOutcome::timeout:
      return "timeout";
    case ProbeOutcome::unknown_error:
      break;
  }
  return "unknown_error";
}

namespace {

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Waits for `events` on fd until the deadline; false on timeout.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    int rc = ::poll(&p, 1, remaining_ms(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}

// Opens a TCP connection to host:port before the deadline; -1 and `r` filled on failure.
int connect_before(const std::string& host, int port, Clock::time_point deadline, ProbeResult& r) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0) {
    r.outcome = ProbeOutcome::connection_error;
    r.error = std::string("cannot resolve ") + host + ": " + gai_strerror(rc);
    return -1;
  }
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int rc = fd < 0 ? -1 : ::connect(fd, res->ai_addr, res->ai_addrlen);
  ::freeaddrinfo(res);
  auto fail = [&](ProbeOutcome o, std::string why) {
    if (fd >= 0) ::close(fd);
    r.outcome = o;
    r.error = std::move(why);
    return -1;
  };
  if (rc != 0 && errno != EINPROGRESS)
    return fail(ProbeOutcome::connection_error, std::strerror(errno));
  if (!wait_for(fd, POLLOUT, deadline)) return fail(ProbeOutcome::timeout, "connect timed out");
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return fail(ProbeOutcome::connection_error, std::strerror(err));
  return fd;
}

// The request line and headers of a probe's GET.
std::string get_request(const std::string& host, int port, const std::string& path,
                        const ProbeHeaders& headers) {
  std::string request =
      "GET " + path + " HTTP/1.1\r\nHost: " + host + ":" + std::to_string(port) + "\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  return request + "Connection: close\r\n\r\n";
}

// The probe's answer as it arrives: read by its framing (status line, headers, Content-Length
// or chunks), so a server that keeps the connection open despite `Connection: close` still
// answers, and bounded, so an endless one cannot fill the orchestrator's memory.
class Answer {
 public:
  Answer(std::string url, std::size_t max_body_bytes)
      : url_(std::move(url)), reader_(http::ResponseLimits{max_body_bytes, kMaxHeadBytes}) {}
  // Takes received bytes; true once the answer is complete or cannot be.
  bool add(const char* data, std::size_t size) {
    pending_.append(data, size);
    pending_.erase(0, reader_.put(pending_));
    return over();
  }
  // The server closed.
  void close() { reader_.put_eof(); }
  bool over() const { return reader_.done() || reader_.failed(); }
  ProbeResult result() {
    ProbeResult r;
    if (reader_.done()) {
      http::ClientResponse response = reader_.take();
      r.outcome = ProbeOutcome::success;
      r.status = response.status;
      r.body = std::move(response.body);
    } else if (reader_.problem() == http::ResponseProblem::malformed && !reader_.head_done()) {
      r.error = "not an HTTP answer";
    } else {
      r.error = reader_.describe(url_, "the probe's limit");
    }
    return r;
  }

 private:
  // A status line and headers far longer than any server's.
  static constexpr std::size_t kMaxHeadBytes = 64 * 1024;
  std::string url_;
  http::ResponseReader reader_;
  std::string pending_;  // received, not parsed yet
};

std::string url_of(const char* scheme, const std::string& host, int port, const std::string& path) {
  return std::string(scheme) + "://" + host + ":" + std::to_string(port) +
         path.substr(0, path.find('?'));
}

// Why a probe step failed.
struct ProbeFailure {
  ProbeOutcome outcome;
  std::string why;
};

// One TLS session over a connected socket (closed with it), each step bounded by `deadline`.
class TlsProbe {
 public:
  TlsProbe(int fd, Clock::time_point deadline) : fd_(fd), deadline_(deadline) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    ssl_ = ctx_ ? SSL_new(ctx_) : nullptr;
  }
  ~TlsProbe() {
    if (ssl_) SSL_free(ssl_);
    if (ctx_) SSL_CTX_free(ctx_);
    ::close(fd_);
  }
  TlsProbe(const TlsProbe&) = delete;
  TlsProbe& operator=(const TlsProbe&) = delete;

  // The handshake, with the same checks as the HTTP client: the system trust store
  // (SSL_CERT_FILE) and the host name.
  std::optional<ProbeFailure> handshake(const std::string& host, int port) {
    if (!ssl_) return ProbeFailure{ProbeOutcome::unknown_error, "cannot create a TLS context"};
    SSL_CTX_set_default_verify_paths(ctx_);
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    SSL_set_verify(ssl_, SSL_VERIFY_PEER, nullptr);
    SSL_set_tlsext_host_name(ssl_, host.c_str());
    SSL_set1_host(ssl_, host.c_str());
    SSL_set_fd(ssl_, fd_);
    for (;;) {
      ERR_clear_error();
      const int rc = SSL_connect(ssl_);
      if (rc == 1) return std::nullopt;
      bool timed_out = false;
      if (await(rc, timed_out)) {
        if (timed_out) return ProbeFailure{ProbeOutcome::timeout, "TLS handshake timed out"};
        continue;
      }
      std::string reason;
      if (const long verify = SSL_get_verify_result(ssl_); verify != X509_V_OK)
        reason = X509_verify_cert_error_string(verify);
      else if (unsigned long e = ERR_get_error(); e != 0)
        reason = ERR_reason_error_string(e) ? ERR_reason_error_string(e) : "unknown TLS error";
      else
        reason = "the connection closed during the handshake";
      return ProbeFailure{
          ProbeOutcome::unknown_error,
          "TLS handshake with " + host + ":" + std::to_string(port) + " failed: " + reason};
    }
  }

  std::optional<ProbeFailure> send(const std::string& data) {
    for (std::size_t sent = 0; sent < data.size();) {
      ERR_clear_error();
      const int rc = SSL_write(ssl_, data.data() + sent, static_cast<int>(data.size() - sent));
      if (rc > 0) {
        sent += static_cast<std::size_t>(rc);
        continue;
      }
      bool timed_out = false;
      if (!await(rc, timed_out))
        return ProbeFailure{ProbeOutcome::connection_error, "TLS send failed"};
      if (timed_out) return ProbeFailure{ProbeOutcome::timeout, "send timed out"};
    }
    return std::nullopt;
  }

  // Reads until `answer` is complete. A close without close_notify still ends an answer that came.
  std::optional<ProbeFailure> read(Answer& answer) {
    bool received = false;
    while (!answer.over()) {
      ERR_clear_error();
      char buf[8192];
      const int rc = SSL_read(ssl_, buf, sizeof buf);
      if (rc > 0) {
        received = true;
        answer.add(buf, static_cast<std::size_t>(rc));
        continue;
      }
      bool timed_out = false;
      if (await(rc, timed_out)) {
        if (timed_out) return ProbeFailure{ProbeOutcome::timeout, "no answer in time"};
        continue;
      }
      if (!received) return ProbeFailure{ProbeOutcome::connection_error, "the connection closed"};
      answer.close();
    }
    return std::nullopt;
  }

 private:
  // Waits for what the last call on the session asked for; false when it was no wait.
  bool await(int rc, bool& timed_out) {
    const int why = SSL_get_error(ssl_, rc);
    if (why != SSL_ERROR_WANT_READ && why != SSL_ERROR_WANT_WRITE) return false;
    timed_out = !wait_for(fd_, why == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline_);
    return true;
  }

  int fd_;
  Clock::time_point deadline_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
};

// A TLS session with host:port; with `request` (a GET of `request_path`), also sends it and
// reads the answer, its body at most `max_body_bytes`.
ProbeResult tls_session(const std::string& host, int port, std::chrono::milliseconds timeout,
                        const std::string* request, const std::string& request_path = {},
                        std::size_t max_body_bytes = 0) {
  ProbeResult r;
  const auto deadline = Clock::now() + timeout;
  const int fd = connect_before(host, port, deadline, r);
  if (fd < 0) return r;
  TlsProbe tls(fd, deadline);
  auto finish = [&](ProbeFailure f) {
    r.outcome = f.outcome;
    r.error = std::move(f.why);
    return r;
  };
  if (auto f = tls.handshake(host, port)) return finish(std::move(*f));
  if (request) {
    if (auto f = tls.send(*request)) return finish(std::move(*f));
    Answer answer(url_of("https", host, port, request_path), max_body_bytes);
    if (auto f = tls.read(answer)) return finish(std::move(*f));
    auto result = answer.result();
    r.status = result.status;
    r.body = std::move(result.body);
    return finish({result.outcome, std::move(result.error)});
  }
  return finish({ProbeOutcome::success, ""});
}

}  // namespace

ProbeResult http_get(const std::string& host, int port, const std::string& path,
                     std::chrono::milliseconds timeout, const ProbeHeaders& headers,
                     std::size_t max_body_bytes) {
  ProbeResult r;
  const auto deadline = Clock::now() + timeout;
  int fd = connect_before(host, port, deadline, r);
  if (fd < 0) return r;
  auto fail = [&](ProbeOutcome o, std::string why) {
    if (fd >= 0) ::close(fd);
    r.outcome = o;
    r.error = std::move(why);
    return r;
  };
  const std::string request = get_request(host, port, path, headers);
  for (std::size_t sent = 0; sent < request.size();) {
    if (!wait_for(fd, POLLOUT, deadline)) return fail(ProbeOutcome::timeout, "send timed out");
    auto n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN) return fail(ProbeOutcome::connection_error, std::strerror(errno));
    if (n > 0) sent += static_cast<std::size_t>(n);
  }
  Answer answer(url_of("http", host, port, path), max_body_bytes);
  bool received = false;
  while (!answer.over()) {
    if (!wait_for(fd, POLLIN, deadline)) return fail(ProbeOutcome::timeout, "no answer in time");
    char buf[8192];
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0 && !received) return fail(ProbeOutcome::connection_error, std::strerror(errno));
    if (n <= 0) {
      answer.close();
      break;
    }
    received = true;
    answer.add(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return answer.result();
}

ProbeResult https_get(const std::string& host, int port, const std::string& path,
                      std::chrono::milliseconds timeout, const ProbeHeaders& headers,
                      std::size_t max_body_bytes) {
  const std::string request = get_request(host, port, path, headers);
  return tls_session(host, port, timeout, &request, path, max_body_bytes);
}

ProbeResult tls_handshake(const std::string& host, int port, std::chrono::milliseconds timeout) {
  return tls_session(host, port, timeout, nullptr);
}

}  // namespace gym::orchestrator
