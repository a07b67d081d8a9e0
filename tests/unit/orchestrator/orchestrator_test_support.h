// Shared fixtures for the orchestrator tests: a private temporary directory, loopback sockets
// that hold ports (OS-chosen, never a fixed number), and error checks.
#pragma once

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "expect.h"
#include "files.h"
#include "temp_dir.h"

namespace gym::orchestrator::testing {

using gym::test::read_text;
using gym::test::TempDir;

// A TCP socket bound on 127.0.0.1, closed on destruction. Bound with SO_REUSEADDR and not
// listening, it *reserves* its port: other programs cannot take it, yet a test bind with
// SO_REUSEADDR (what orchestrator::port_free does) still succeeds, so the port counts as free.
// After listen() the port is taken for everyone.
class Socket {
 public:
  // `port` 0 lets the OS choose. Throws when the port cannot be bound.
  explicit Socket(int port = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error("socket failed");
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd_);
      throw std::runtime_error("bind failed on port " + std::to_string(port));
    }
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(Socket&& other) noexcept : fd_(other.fd_), port_(other.port_) { other.fd_ = -1; }
  Socket& operator=(Socket&&) = delete;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int port() const { return port_; }
  int fd() const { return fd_; }
  // Takes the port: from now on no test bind succeeds on it.
  Socket& listen() {
    if (::listen(fd_, 16) != 0) throw std::runtime_error("listen failed");
    return *this;
  }
  // Closes the socket now (the port is free again).
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// `n` reserved sockets on consecutive ports P, P+1, ..., chosen by the OS.
inline std::vector<Socket> reserve_consecutive(int n) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    std::vector<Socket> ports;
    ports.emplace_back(0);
    const int first = ports.front().port();
    if (first + n - 1 > 65535) continue;
    try {
      for (int i = 1; i < n; ++i) ports.emplace_back(first + i);
    } catch (const std::runtime_error&) {
      continue;  // a neighbour is in use: try elsewhere
    }
    return ports;
  }
  throw std::runtime_error("no " + std::to_string(n) + " consecutive free ports on 127.0.0.1");
}

using gym::test::config_error_of;
using gym::test::error_of;

}  // namespace gym::orchestrator::testing
