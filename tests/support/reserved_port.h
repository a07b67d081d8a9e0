#pragma once
// Test support, header-only: ports a test owns for its whole life, so parallel tests never race
// for them (issue 13). A port that was merely free a moment ago (bind to 0, close) can be taken
// by any other test, or by a client's outgoing connection, before the server binds it.
//
// A reservation is a socket bound to the port without listening: it refuses connections, the
// kernel hands the port to no bind(0) and no connect(), and another reservation's exclusive bind
// fails on it. SO_REUSEADDR is set after the bind, so the server the test starts (our servers
// bind with SO_REUSEADDR, as uvicorn does) can still take the port while the reservation holds
// it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace gym::test {

class ReservedPort {
 public:
  // An OS-chosen port on 127.0.0.1 (the ephemeral range).
  ReservedPort() : ReservedPort(0) {}
  ~ReservedPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  ReservedPort(ReservedPort&& other) noexcept : fd_(other.fd_), port_(other.port_) {
    other.fd_ = -1;
  }
  ReservedPort(const ReservedPort&) = delete;
  ReservedPort& operator=(const ReservedPort&) = delete;
  ReservedPort& operator=(ReservedPort&&) = delete;

  int port() const { return port_; }
  std::string text() const { return std::to_string(port_); }

  // `port` itself, or nothing (port() == 0) when any socket is bound there.
  static ReservedPort exactly(int port) { return ReservedPort(port); }

 private:
  explicit ReservedPort(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error("socket() failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    // Without SO_REUSEADDR the bind fails on a port any other socket is bound to.
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      if (port == 0) throw std::runtime_error("bind(127.0.0.1:0) failed");
      return;
    }
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  }

  int fd_ = -1;
  int port_ = 0;
};

// `n` consecutive reserved ports (Prometheus: the orchestrator's port, then one per worker),
// chosen between 20001 and 30000: above the orchestrator's default port_range (10001-20000) and
// below the kernel's ephemeral range, so neither a deployment's own assignment nor bind(0) meets
// them. Throws when no such run is free.
inline std::vector<ReservedPort> reserve_consecutive_ports(int n) {
  std::mt19937 rng(std::random_device{}());
  for (int attempt = 0; attempt < 500; ++attempt) {
    const int base = 20001 + static_cast<int>(rng() % (10000 - static_cast<unsigned>(n)));
    std::vector<ReservedPort> ports;
    for (int i = 0; i < n; ++i) {
      ports.push_back(ReservedPort::exactly(base + i));
      if (ports.back().port() == 0) break;
    }
    if (static_cast<int>(ports.size()) == n && ports.back().port() != 0) return ports;
  }
  throw std::runtime_error("no " + std::to_string(n) + " consecutive free ports in 20001-30000");
}

// Overrides for a deployment a test kills while its collector goes on calling it: its ports come
// from 30001-32700 (above the ReservedPorts, below the ephemeral range), so the calls that follow
// its death cannot land on another test's deployment that was just given one of the freed ports
// from the default range (seen in CI: a stranger's 1,000 `/run`s at a resources server).
inline constexpr const char* kDyingDeploymentPorts =
    " ++port_range_low=30001 ++port_range_high=32700";

}  // namespace gym::test
