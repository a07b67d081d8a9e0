#include "cli/deployment_watch.h"

#include "http/url.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>

namespace gym::cli {

namespace {

constexpr std::chrono::seconds kProbeInterval{1};
constexpr std::chrono::milliseconds kProbeWait{500};

bool is_refusal(int error) {
  return error == ECONNREFUSED || error == ENETUNREACH || error == EHOSTUNREACH ||
         error == ECONNRESET;
}

}  // namespace

bool connection_refused(const std::string& url, std::chrono::milliseconds wait) {
  std::string invalid;
  const auto u = http::parse_url(url, invalid);
  if (!u) return false;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(u->host.c_str(), u->port.c_str(), &hints, &found) != 0 || !found)
    return true;  // the name no longer resolves: nothing can answer there
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);
  const int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                          found->ai_protocol);
  if (fd < 0) return false;  // out of descriptors says nothing about the server
  bool refused = false;
  if (::connect(fd, found->ai_addr, found->ai_addrlen) != 0) {
    if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(wait.count())) == 1) {
        int error = 0;
        socklen_t len = sizeof error;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
        refused = is_refusal(error);
      }
    } else {
      refused = is_refusal(errno);
    }
  }
  ::close(fd);
  return refused;
}

DeploymentWatch::DeploymentWatch(std::string head_url,
                                 const std::map<std::string, std::string>& agent_urls,
                                 double unreachable_seconds)
    : limit_(static_cast<std::int64_t>(unreachable_seconds * 1000.0)) {
  urls_.push_back(std::move(head_url));
  for (const auto& [name, url] : agent_urls) urls_.push_back(url);
}

int DeploymentWatch::poll(Clock::time_point now) {
  if (limit_.count() <= 0) return 0;
  if (last_probe_ && now - *last_probe_ < kProbeInterval) return 0;
  last_probe_ = now;
  for (const auto& url : urls_) {
    if (!connection_refused(url, kProbeWait)) {
      refusing_since_.reset();
      return 0;
    }
  }
  if (!refusing_since_) refusing_since_ = now;
  if (now - *refusing_since_ < limit_) return 0;
  std::string agents;
  for (std::size_t i = 1; i < urls_.size(); ++i) agents += (i > 1 ? ", " : "") + urls_[i];
  std::fprintf(stderr,
               "error: the deployment is gone: its head server %s and every agent (%s) have "
               "refused connections for %.0f s (deployment_unreachable_seconds). Start it again "
               "(gym env start), then resume.\n",
               urls_.front().c_str(), agents.c_str(),
               std::chrono::duration<double>(now - *refusing_since_).count());
  return 2;
}

}  // namespace gym::cli
