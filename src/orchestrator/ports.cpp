#include "orchestrator/ports.h"

#include "core/config.h"

#include <boost/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <random>
#include <set>

namespace gym::orchestrator {
namespace json = boost::json;

namespace {

json::object& instance_block(json::object& cfg, const core::ServerInstance& inst) {
  return cfg[inst.name].as_object()[inst.server_type].as_object()[inst.impl].as_object();
}

// Binds a socket to host:port (a host that is no IPv4 address: every address), with
// SO_REUSEADDR before the bind (`reuse_first`) or after it; the bound port, 0 when the bind
// failed. The socket is left in *fd (-1 when it could not be created).
std::uint16_t bind_socket(const std::string& host, int port, bool reuse_first, int* fd) {
  *fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (*fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) a.sin_addr.s_addr = htonl(INADDR_ANY);
  int one = 1;
  if (reuse_first) ::setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(*fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return 0;
  if (!reuse_first) ::setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  socklen_t len = sizeof a;
  ::getsockname(*fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

// Whether host:port can be bound the way our servers bind (SO_REUSEADDR); the bound port or 0.
std::uint16_t try_bind(const std::string& host, int port) {
  int fd = -1;
  const std::uint16_t bound = bind_socket(host, port, /*reuse_first=*/true, &fd);
  if (fd >= 0) ::close(fd);
  return bound;
}

// One Prometheus port per worker, one when num_workers <= 1.
std::int64_t prometheus_port_count(const core::ServerInstance& inst) {
  return std::max<std::int64_t>(1, core::get_int(inst.config, "num_workers", 1, 0, 4096));
}

}  // namespace

std::uint16_t free_port(const std::string& host) { return try_bind(host, 0); }

PortHold PortHold::take(const std::string& host, int port) {
  PortHold hold;
  hold.port_ = bind_socket(host, port, /*reuse_first=*/false, &hold.fd_);
  return hold;
}

PortHold::~PortHold() {
  if (fd_ >= 0) ::close(fd_);
}

PortHold::PortHold(PortHold&& other) noexcept : fd_(other.fd_), port_(other.port_) {
  other.fd_ = -1;
}

bool is_loopback_host(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.ends_with('.')) host.remove_suffix(1);  // "localhost." is the same name, rooted
  std::string text(host);
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (text == "localhost") return true;
  if (text.find_first_of(" \t\n") != std::string::npos) return false;  // inet_aton stops there
  // An IPv4 address in any form the resolver takes (127.1 is 127.0.0.1).
  in_addr v4{};
  if (::inet_aton(text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, text.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;  // ::ffff:127.0.0.1
}

std::vector<std::string> check_listen_hosts(const json::object& cfg,
                                            const std::vector<core::ServerInstance>& instances) {
  const auto addresses = core::DeploymentAddresses::from_config(cfg);
  std::vector<std::string> warnings;
  auto warn = [&](const std::string& who, const std::string& host) {
    warnings.push_back(who + " listens on " + host +
                       ", which is not a loopback address: gym-cpp servers have no "
                       "authentication, so anyone who can reach it can call them (and read the "
                       "config from the head server). Bind 127.0.0.1 unless this is a private "
                       "network.");
  };
  if (!is_loopback_host(addresses.head_host)) warn("the head server", addresses.head_host);
  for (const auto& inst : instances) {
    const std::string host = core::get_string(inst.config, "host", addresses.default_host);
    if (!is_loopback_host(host)) warn("server " + inst.name, host);
  }
  return warnings;
}

bool port_free(const std::string& host, int port) { return try_bind(host, port) != 0; }

void assign_ports(json::object& cfg, const std::vector<core::ServerInstance>& instances,
                  const std::set<std::int64_t>& reserved, std::vector<PortHold>* holds,
                  const std::set<std::string>& remote) {
  const auto addresses = core::DeploymentAddresses::from_config(cfg);
  const std::string& default_host = addresses.default_host;
  std::set<std::int64_t> taken{addresses.head_port};
  for (const auto& inst : instances)
    if (auto* p = inst.config.if_contains("port"); p && !p->is_null())
      taken.insert(core::get_int(inst.config, "port", 0, 0, 65535));
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<std::int64_t> pick(addresses.port_range_low,
                                                   addresses.port_range_high);
  json::array disallowed;
  for (const auto& t : taken) disallowed.push_back(t);
  for (const auto& inst : instances) {
    auto& block = instance_block(cfg, inst);
    if (!block.contains("host") || block.at("host").is_null()) block["host"] = default_host;
    const bool checkable = !remote.count(inst.name);
    if (auto* p = block.if_contains("port"); p && !p->is_null()) {
      // Another process answering there would pass our readiness check for this server.
      auto port = core::get_int(inst.config, "port", 0, 0, 65535);
      if (port != 0 && checkable &&
          !port_free(std::string(block.at("host").as_string()), static_cast<int>(port)))
        throw std::runtime_error(
            "port " + std::to_string(port) + " of server " + inst.name +
            " is already in use; stop what listens there or set another with ++" + inst.name + "." +
            inst.server_type + "." + inst.impl + ".port=<port>");
      continue;
    }
    std::string host(block.at("host").as_string());
    std::int64_t port = 0;
    for (int attempt = 0; attempt < 50 && port == 0; ++attempt) {
      auto candidate = pick(rng);
      if (taken.count(candidate) || reserved.count(candidate)) continue;
      if (!checkable) {
        port = candidate;
      } else if (holds) {
        auto hold = PortHold::take(host, static_cast<int>(candidate));
        if (hold.port() == 0) continue;
        holds->push_back(std::move(hold));
        port = candidate;
      } else if (port_free(host, static_cast<int>(candidate))) {
        port = candidate;
      }
    }
    if (port == 0)
      throw std::runtime_error("no free port for " + inst.name + " in [" +
                               std::to_string(addresses.port_range_low) + ", " +
                               std::to_string(addresses.port_range_high) +
                               "] after 50 attempts; widen "
                               "port_range_low/port_range_high");
    block["port"] = port;
    taken.insert(port);
    disallowed.push_back(port);
  }
  cfg["disallowed_ports"] = std::move(disallowed);
}

std::set<std::int64_t> prometheus_ports(const std::vector<core::ServerInstance>& instances,
                                        int base) {
  std::set<std::int64_t> ports{base};
  std::int64_t next = base + 1;
  for (const auto& inst : instances)
    for (auto n = prometheus_port_count(inst); n > 0; --n) ports.insert(next++);
  return ports;
}

void assign_prometheus_ports(json::object& cfg, const std::vector<core::ServerInstance>& instances,
                             int base) {
  std::int64_t next = base + 1;
  for (const auto& inst : instances) {
    const auto workers = prometheus_port_count(inst);
    json::array ports;
    for (std::int64_t i = 0; i < workers; ++i) ports.push_back(next++);
    if (next - 1 > 65535)
      throw core::ConfigError("telemetry.prometheus.port " + std::to_string(base) +
                              ": the servers' Prometheus ports would run past 65535; choose a "
                              "lower base port");
    instance_block(cfg, inst)["prometheus_ports"] = std::move(ports);
  }
}

}  // namespace gym::orchestrator
