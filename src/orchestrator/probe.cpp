#include "orchestrator/probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

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

}  // namespace

ProbeResult http_get(const std::string& host, int port, const std::string& path,
                     std::chrono::milliseconds timeout) {
  ProbeResult r;
  const auto deadline = Clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0) {
    r.outcome = ProbeOutcome::connection_error;
    r.error = std::string("cannot resolve ") + host + ": " + gai_strerror(rc);
    return r;
  }
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int rc = fd < 0 ? -1 : ::connect(fd, res->ai_addr, res->ai_addrlen);
  ::freeaddrinfo(res);
  auto fail = [&](ProbeOutcome o, std::string why) {
    if (fd >= 0) ::close(fd);
    r.outcome = o;
    r.error = std::move(why);
    return r;
  };
  if (rc != 0 && errno != EINPROGRESS)
    return fail(ProbeOutcome::connection_error, std::strerror(errno));
  if (!wait_for(fd, POLLOUT, deadline)) return fail(ProbeOutcome::timeout, "connect timed out");
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return fail(ProbeOutcome::connection_error, std::strerror(err));

  std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + host + ":" + service +
                        "\r\nConnection: close\r\n\r\n";
  for (std::size_t sent = 0; sent < request.size();) {
    if (!wait_for(fd, POLLOUT, deadline)) return fail(ProbeOutcome::timeout, "send timed out");
    auto n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN) return fail(ProbeOutcome::connection_error, std::strerror(errno));
    if (n > 0) sent += static_cast<std::size_t>(n);
  }
  std::string data;
  for (;;) {
    if (!wait_for(fd, POLLIN, deadline)) return fail(ProbeOutcome::timeout, "no answer in time");
    char buf[8192];
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      if (data.empty()) return fail(ProbeOutcome::connection_error, std::strerror(errno));
      break;
    }
    data.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  fd = -1;
  if (data.rfind("HTTP/1.", 0) != 0 || data.size() < 12)
    return fail(ProbeOutcome::unknown_error, "not an HTTP answer");
  r.outcome = ProbeOutcome::success;
  r.status = std::atoi(data.c_str() + 9);
  auto head_end = data.find("\r\n\r\n");
  if (head_end != std::string::npos) {
    std::string head = data.substr(0, head_end);
    r.body = data.substr(head_end + 4);
    // A chunked answer (not what gym servers send, but possible) is decoded simply.
    std::string lower = head;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.find("transfer-encoding: chunked") != std::string::npos) {
      std::string decoded;
      std::size_t pos = 0;
      while (pos < r.body.size()) {
        auto eol = r.body.find("\r\n", pos);
        if (eol == std::string::npos) break;
        auto size = std::strtoul(r.body.substr(pos, eol - pos).c_str(), nullptr, 16);
        if (size == 0) break;
        decoded += r.body.substr(eol + 2, size);
        pos = eol + 2 + size + 2;
      }
      r.body = decoded;
    }
  }
  return r;
}

}  // namespace gym::orchestrator
