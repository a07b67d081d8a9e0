// Ports of a deployment (docs/design/processes.md#start-up): orchestrator/ports.h. Ports come from
// the OS (bound on 127.0.0.1:0) and are held by the test while it runs; no fixed numbers.
#include "orchestrator/ports.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <set>

#include "orchestrator_test_support.h"
#include "reserved_port.h"

namespace gym::orchestrator {
namespace {

namespace json = boost::json;
using testing::config_error_of;
using testing::error_of;
using testing::reserve_consecutive;
using testing::Socket;

// `{<name>: {<type>: {<impl>: block}}}` entry of a config.
void add_instance(json::object& cfg, const std::string& name, const std::string& type,
                  const std::string& impl, json::object block = {}) {
  cfg[name] = json::object{{type, json::object{{impl, std::move(block)}}}};
}

const json::object& block_of(const json::object& cfg, const std::string& name) {
  const auto& types = cfg.at(name).as_object();
  return types.begin()->value().as_object().begin()->value().as_object();
}

json::object& block_of_mut(json::object& cfg, const std::string& name) {
  auto& types = cfg.at(name).as_object();
  return types.begin()->value().as_object().begin()->value().as_object();
}

std::int64_t port_of(const json::object& cfg, const std::string& name) {
  return block_of(cfg, name).at("port").as_int64();
}

std::vector<std::int64_t> disallowed(const json::object& cfg) {
  std::vector<std::int64_t> out;
  for (const auto& v : cfg.at("disallowed_ports").as_array()) out.push_back(v.as_int64());
  return out;
}

// The kernel's ephemeral port range (what binding port 0 picks from).
std::pair<int, int> ephemeral_range() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  in >> low >> high;
  return {low, high};
}

// ---- free_port / port_free ----

TEST(FreePort, IsAnEphemeralPortOfTheOs) {
  auto [low, high] = ephemeral_range();
  ASSERT_GT(low, 0);
  auto port = free_port();
  EXPECT_GE(port, low);
  EXPECT_LE(port, high);
  auto other = free_port("127.0.0.1");
  EXPECT_GE(other, low);
  EXPECT_LE(other, high);
}

TEST(PortFree, ListeningPortIsNotFree) {
  Socket socket;
  socket.listen();
  EXPECT_FALSE(port_free("127.0.0.1", socket.port()));
  EXPECT_FALSE(port_free("0.0.0.0", socket.port()));  // the wildcard overlaps 127.0.0.1
}

TEST(PortFree, ABoundButNotListeningPortWithReuseCountsAsFree) {
  Socket reserved;  // SO_REUSEADDR, not listening: the test bind succeeds
  EXPECT_TRUE(port_free("127.0.0.1", reserved.port()));
}

TEST(PortFree, AnAddressOfNoInterfaceCannotBeBound) {
  std::ifstream nonlocal("/proc/sys/net/ipv4/ip_nonlocal_bind");
  int allowed = 0;
  nonlocal >> allowed;
  if (allowed) GTEST_SKIP() << "net.ipv4.ip_nonlocal_bind is on";
  Socket reserved;
  EXPECT_FALSE(port_free("192.0.2.1", reserved.port()));  // TEST-NET-1 (RFC 5737)
  EXPECT_EQ(free_port("192.0.2.1"), 0);
}

// ---- gym::test::ReservedPort (tests/support/reserved_port.h): how tests own their ports ----

// A socket that listens on 127.0.0.1:`port` with SO_REUSEADDR, as every gym server binds.
bool server_can_listen_on(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok =
      ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd, 4) == 0;
  ::close(fd);
  return ok;
}

TEST(ReservedPort, IsHandedToNoOtherBindOrReservationYetTheServerCanTakeIt) {
  const gym::test::ReservedPort reserved;
  ASSERT_GT(reserved.port(), 0);
  std::set<std::uint16_t> chosen;  // what bind(0) gives others meanwhile
  for (int i = 0; i < 2000; ++i) chosen.insert(free_port());
  EXPECT_EQ(chosen.count(static_cast<std::uint16_t>(reserved.port())), 0u);
  EXPECT_EQ(gym::test::ReservedPort::exactly(reserved.port()).port(), 0);
  EXPECT_TRUE(server_can_listen_on(reserved.port()));
  // Nothing listens on it: a connection is refused, not left waiting.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(reserved.port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_NE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(errno, ECONNREFUSED);
  ::close(fd);
}

TEST(ReservedPort, ConsecutiveRunsDoNotOverlapAndStayOutOfTheDeploymentRange) {
  const auto first = gym::test::reserve_consecutive_ports(5);
  const auto second = gym::test::reserve_consecutive_ports(5);
  std::set<int> ports;
  for (const auto* run : {&first, &second}) {
    for (std::size_t i = 0; i < run->size(); ++i) {
      EXPECT_EQ((*run)[i].port(), (*run)[0].port() + static_cast<int>(i));
      EXPECT_GT((*run)[i].port(), core::DeploymentAddresses{}.port_range_high);
      ports.insert((*run)[i].port());
    }
  }
  EXPECT_EQ(ports.size(), 10u);
}

// ---- assign_ports ----

TEST(AssignPorts, ExplicitPortsAreKeptOthersComeFromTheRange) {
  auto held = reserve_consecutive(5);  // r0 .. r4
  const int r0 = held[0].port();
  json::object cfg{{"default_host", "0.0.0.0"},
                   {"head_server", json::object{{"host", "127.0.0.1"}, {"port", r0 + 1}}},
                   {"port_range_low", r0},
                   {"port_range_high", r0 + 3}};
  add_instance(cfg, "explicit", "resources_servers", "example",
               {{"domain", "other"}, {"host", "127.0.0.1"}, {"port", r0 + 4}});
  add_instance(cfg, "first", "responses_api_models", "replay_model", {{"host", nullptr}});
  add_instance(cfg, "second", "responses_api_agents", "simple_agent");

  assign_ports(cfg, core::find_server_instances(cfg));

  EXPECT_EQ(port_of(cfg, "explicit"), r0 + 4);
  EXPECT_EQ(block_of(cfg, "explicit").at("host"), "127.0.0.1");
  EXPECT_EQ(block_of(cfg, "first").at("host"), "0.0.0.0");  // default_host; null is no host
  EXPECT_EQ(block_of(cfg, "second").at("host"), "0.0.0.0");
  const auto first = port_of(cfg, "first");
  const auto second = port_of(cfg, "second");
  const std::set<std::int64_t> allowed{r0, r0 + 2, r0 + 3};  // the range without the head port
  EXPECT_TRUE(allowed.count(first)) << first;
  EXPECT_TRUE(allowed.count(second)) << second;
  EXPECT_NE(first, second);
  // The head port and the explicit ports (ascending), then the assigned ones in config order.
  EXPECT_EQ(disallowed(cfg), (std::vector<std::int64_t>{r0 + 1, r0 + 4, first, second}));
}

TEST(AssignPorts, HeadPortAndEachOthersAreExcluded) {
  auto held = reserve_consecutive(3);
  const int r0 = held[0].port();
  json::object cfg{{"head_server", json::object{{"port", r0 + 1}}},
                   {"port_range_low", r0},
                   {"port_range_high", r0 + 2}};
  add_instance(cfg, "one", "responses_api_agents", "simple_agent");
  add_instance(cfg, "two", "responses_api_agents", "simple_agent");
  assign_ports(cfg, core::find_server_instances(cfg));
  // Only two ports of the range are left: both are used, whatever the random order.
  EXPECT_EQ((std::set<std::int64_t>{port_of(cfg, "one"), port_of(cfg, "two")}),
            (std::set<std::int64_t>{r0, r0 + 2}));
  EXPECT_EQ(block_of(cfg, "one").at("host"), "127.0.0.1");  // the default default_host
}

TEST(AssignPorts, APortInUseIsSkipped) {
  auto held = reserve_consecutive(2);
  held[0].listen();  // r0 is taken
  const int r0 = held[0].port();
  json::object cfg{{"port_range_low", r0}, {"port_range_high", r0 + 1}};
  add_instance(cfg, "only", "responses_api_agents", "simple_agent");
  assign_ports(cfg, core::find_server_instances(cfg));
  EXPECT_EQ(port_of(cfg, "only"), r0 + 1);
  // Without head_server in the config the head port is the default 11000.
  EXPECT_EQ(disallowed(cfg), (std::vector<std::int64_t>{11000, r0 + 1}));
}

TEST(AssignPorts, ATakenExplicitPortIsAnErrorNamingTheServer) {
  Socket busy;
  busy.listen();
  json::object cfg;
  add_instance(cfg, "busy_server", "resources_servers", "example",
               {{"domain", "other"}, {"port", busy.port()}});
  EXPECT_EQ(
      error_of<std::runtime_error>([&] { assign_ports(cfg, core::find_server_instances(cfg)); }),
      "port " + std::to_string(busy.port()) +
          " of server busy_server is already in use; stop what listens there or set "
          "another with ++busy_server.resources_servers.example.port=<port>");
}

TEST(AssignPorts, NoFreePortInTheRangeIsAnError) {
  auto held = reserve_consecutive(2);
  const int r0 = held[0].port();
  json::object cfg{{"head_server", json::object{{"port", r0}}},
                   {"port_range_low", r0},
                   {"port_range_high", r0 + 1}};
  add_instance(cfg, "pinned", "responses_api_agents", "simple_agent", {{"port", r0 + 1}});
  add_instance(cfg, "loose", "responses_api_agents", "simple_agent");
  EXPECT_EQ(
      error_of<std::runtime_error>([&] { assign_ports(cfg, core::find_server_instances(cfg)); }),
      "no free port for loose in [" + std::to_string(r0) + ", " + std::to_string(r0 + 1) +
          "] after 50 attempts; widen port_range_low/port_range_high");
}

TEST(AssignPorts, InvalidRangeIsAConfigError) {
  json::object cfg{{"port_range_low", 20000}, {"port_range_high", 10000}};
  add_instance(cfg, "one", "responses_api_agents", "simple_agent");
  EXPECT_CONTAINS(config_error_of([&] { assign_ports(cfg, core::find_server_instances(cfg)); }),
                  "config key `port_range_high` must be an integer between 20000 and 65535");
}

TEST(AssignPorts, ReservedPortsAreNeverAssigned) {
  auto held = reserve_consecutive(3);
  const int r0 = held[0].port();
  json::object cfg{{"port_range_low", r0}, {"port_range_high", r0 + 2}};
  add_instance(cfg, "only", "responses_api_agents", "simple_agent");
  assign_ports(cfg, core::find_server_instances(cfg), {r0, r0 + 1});
  EXPECT_EQ(port_of(cfg, "only"), r0 + 2);
  // Reserved ports belong to someone else: they are not listed as this deployment's.
  EXPECT_EQ(disallowed(cfg), (std::vector<std::int64_t>{11000, r0 + 2}));
}

TEST(AssignPorts, ARangeOfReservedPortsOnlyHasNoFreePort) {
  auto held = reserve_consecutive(1);
  const int r0 = held[0].port();
  json::object cfg{{"port_range_low", r0}, {"port_range_high", r0}};
  add_instance(cfg, "only", "responses_api_agents", "simple_agent");
  EXPECT_EQ(error_of<std::runtime_error>(
                [&] { assign_ports(cfg, core::find_server_instances(cfg), {r0}); }),
            "no free port for only in [" + std::to_string(r0) + ", " + std::to_string(r0) +
                "] after 50 attempts; widen port_range_low/port_range_high");
}

// Two deployments starting at once: the first one's chosen ports stay held until its servers
// listen, so the second never chooses them; the server a port is held for can still bind it.
TEST(AssignPorts, HeldPortsAreNeverChosenByAnotherDeploymentYetTheirServerCanBindThem) {
  auto range = reserve_consecutive(2);
  const int r0 = range[0].port();
  range.clear();  // both free again: the range of both deployments
  json::object first{{"port_range_low", r0}, {"port_range_high", r0 + 1}};
  add_instance(first, "a", "responses_api_agents", "simple_agent");
  std::vector<PortHold> holds;
  assign_ports(first, core::find_server_instances(first), {}, &holds);
  ASSERT_EQ(holds.size(), 1u);
  const auto held = port_of(first, "a");
  EXPECT_EQ(holds[0].port(), held);
  for (int i = 0; i < 20; ++i) {  // the choice is random: every time the other port
    json::object second = first;
    second.erase("disallowed_ports");
    block_of_mut(second, "a").erase("port");
    std::vector<PortHold> second_holds;
    assign_ports(second, core::find_server_instances(second), {}, &second_holds);
    EXPECT_NE(port_of(second, "a"), held);
  }
  EXPECT_TRUE(server_can_listen_on(static_cast<int>(held)));
}

// With the Prometheus endpoint on at `base`, the random server ports avoid `base` and the servers'
// Prometheus ports.
TEST(AssignPorts, ServerPortsAvoidThePrometheusPorts) {
  auto held = reserve_consecutive(3);
  const int base = held[0].port();
  json::object cfg{{"port_range_low", base}, {"port_range_high", base + 2}};
  add_instance(cfg, "only", "responses_api_agents", "simple_agent");
  auto instances = core::find_server_instances(cfg);
  assign_ports(cfg, instances, prometheus_ports(instances, base));
  instances = core::find_server_instances(cfg);
  assign_prometheus_ports(cfg, instances, base);
  EXPECT_EQ(port_of(cfg, "only"), base + 2);
  EXPECT_EQ(block_of(cfg, "only").at("prometheus_ports"), json::array{base + 1});
}

// ---- assign_prometheus_ports ----

std::vector<std::int64_t> prometheus_of(const json::object& cfg, const std::string& name) {
  std::vector<std::int64_t> out;
  for (const auto& v : block_of(cfg, name).at("prometheus_ports").as_array())
    out.push_back(v.as_int64());
  return out;
}

TEST(AssignPrometheusPorts, ConsecutivePortsPerWorkerInConfigOrder) {
  json::object cfg;
  add_instance(cfg, "model", "responses_api_models", "replay_model");                        // 1
  add_instance(cfg, "env", "resources_servers", "example", {{"num_workers", 3}});            // 3
  add_instance(cfg, "agent", "responses_api_agents", "simple_agent", {{"num_workers", 0}});  // 1
  add_instance(cfg, "solo", "responses_api_agents", "simple_agent", {{"num_workers", 1}});   // 1
  assign_prometheus_ports(cfg, core::find_server_instances(cfg), 9000);
  EXPECT_EQ(prometheus_of(cfg, "model"), (std::vector<std::int64_t>{9001}));
  EXPECT_EQ(prometheus_of(cfg, "env"), (std::vector<std::int64_t>{9002, 9003, 9004}));
  EXPECT_EQ(prometheus_of(cfg, "agent"), (std::vector<std::int64_t>{9005}));
  EXPECT_EQ(prometheus_of(cfg, "solo"), (std::vector<std::int64_t>{9006}));
  EXPECT_FALSE(cfg.contains("disallowed_ports"));
}

TEST(PrometheusPorts, TheBaseAndEveryPortAssignPrometheusPortsGives) {
  json::object cfg;
  add_instance(cfg, "model", "responses_api_models", "replay_model");
  add_instance(cfg, "env", "resources_servers", "example", {{"num_workers", 3}});
  add_instance(cfg, "agent", "responses_api_agents", "simple_agent", {{"num_workers", 0}});
  auto instances = core::find_server_instances(cfg);
  auto ports = prometheus_ports(instances, 9000);
  EXPECT_EQ(ports, (std::set<std::int64_t>{9000, 9001, 9002, 9003, 9004, 9005}));

  assign_prometheus_ports(cfg, instances, 9000);
  std::set<std::int64_t> assigned{9000};
  for (const char* name : {"model", "env", "agent"})
    for (auto p : prometheus_of(cfg, name)) assigned.insert(p);
  EXPECT_EQ(assigned, ports);
}

TEST(AssignPrometheusPorts, UpTo65535IsFine) {
  json::object cfg;
  add_instance(cfg, "a", "responses_api_agents", "simple_agent", {{"num_workers", 2}});
  assign_prometheus_ports(cfg, core::find_server_instances(cfg), 65533);
  EXPECT_EQ(prometheus_of(cfg, "a"), (std::vector<std::int64_t>{65534, 65535}));
}

TEST(AssignPrometheusPorts, PastThe65535IsAConfigError) {
  json::object cfg;
  add_instance(cfg, "a", "responses_api_agents", "simple_agent");
  add_instance(cfg, "b", "responses_api_agents", "simple_agent", {{"num_workers", 2}});
  EXPECT_EQ(config_error_of(
                [&] { assign_prometheus_ports(cfg, core::find_server_instances(cfg), 65533); }),
            "telemetry.prometheus.port 65533: the servers' Prometheus ports would run past "
            "65535; choose a lower base port");
}

}  // namespace
TEST(CheckListenHosts, NonLoopbackHostsWarn) {
  json::object cfg;
  add_instance(cfg, "local", "resources_servers", "mcqa", json::object{{"host", "127.0.0.2"}});
  add_instance(cfg, "open", "resources_servers", "mcqa", json::object{{"host", "0.0.0.0"}});
  add_instance(cfg, "default", "resources_servers", "mcqa");
  auto warnings = check_listen_hosts(cfg, core::find_server_instances(cfg));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("server open listens on 0.0.0.0"), std::string::npos);
  EXPECT_NE(warnings[0].find("no authentication"), std::string::npos);
  cfg["head_server"] = json::object{{"host", "10.0.0.5"}};
  EXPECT_EQ(check_listen_hosts(cfg, core::find_server_instances(cfg)).size(), 2u);
}

}  // namespace gym::orchestrator
