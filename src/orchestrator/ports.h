#pragma once
// Ports of a deployment (docs/design/processes.md#start-up): checks before spawning servers and the
// assignment written into the merged config.
#include "core/config.h"

#include <boost/json/object.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gym::orchestrator {

// A port the OS considers free on `host` right now (bind to port 0 and read it back).
std::uint16_t free_port(const std::string& host = "127.0.0.1");

// Whether a configured host is a loopback address: localhost (any case, a trailing dot
// allowed), 127.0.0.0/8 in any form inet_aton takes, ::1, or IPv4-mapped ::ffff:127.x.y.z;
// IPv6 addresses with or without [].
bool is_loopback_host(std::string_view host);

// Servers have no authentication, so where they listen matters: every host that is not loopback
// (is_loopback_host) is returned as a warning naming the instance.
std::vector<std::string> check_listen_hosts(const boost::json::object& cfg,
                                            const std::vector<core::ServerInstance>& instances);
// Whether `port` can be bound on `host` right now.
bool port_free(const std::string& host, int port);

// A port this process holds for a server it is about to start: a socket bound to it without
// SO_REUSEADDR (so the bind fails wherever any socket is bound, and no other deployment's hold
// or bind(0) can share it), which then sets SO_REUSEADDR and never listens (so the server,
// binding with SO_REUSEADDR, still gets the port). Released when the server is up.
class PortHold {
 public:
  // The hold, or one whose port() is 0 when `host`:`port` cannot be taken exclusively.
  static PortHold take(const std::string& host, int port);
  ~PortHold();
  PortHold(PortHold&& other) noexcept;
  PortHold& operator=(PortHold&&) = delete;
  PortHold(const PortHold&) = delete;
  PortHold& operator=(const PortHold&) = delete;
  int port() const { return port_; }

 private:
  PortHold() = default;
  int fd_ = -1;
  int port_ = 0;
};

// Gives every instance a host (`default_host` when it has none) and a port: an explicit port is
// kept (std::runtime_error when it is taken on its host), the others get a random free port of
// [port_range_low, port_range_high] other than the head server's, each other's and `reserved`
// (the Prometheus ports when that endpoint is on). Writes the used ports to `disallowed_ports`.
// `instances` are find_server_instances(cfg). With `holds`, every chosen port is a PortHold
// appended there until the caller's servers listen: two deployments starting at once never choose
// the same port. Ports of the instances named in `remote` (they run on another node) cannot be
// checked from here: they are only kept apart from the others.
void assign_ports(boost::json::object& cfg, const std::vector<core::ServerInstance>& instances,
                  const std::set<std::int64_t>& reserved = {},
                  std::vector<PortHold>* holds = nullptr, const std::set<std::string>& remote = {});

// The orchestrator serves Prometheus on `base`; each instance, in config order, gets the next
// max(1, num_workers) ports, written into its block as `prometheus_ports`. ConfigError when they
// would run past 65535.
void assign_prometheus_ports(boost::json::object& cfg,
                             const std::vector<core::ServerInstance>& instances, int base);
// `base` and every port assign_prometheus_ports gives the instances: what assign_ports must
// leave alone when the endpoint is on.
std::set<std::int64_t> prometheus_ports(const std::vector<core::ServerInstance>& instances,
                                        int base);

}  // namespace gym::orchestrator
