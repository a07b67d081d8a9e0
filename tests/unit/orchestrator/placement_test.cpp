// Where servers run (issue 16): orchestrator/placement.h. The Slurm commands are answered by a
// scripted runner here; tests/integration/slurm_submit_test.cpp runs the real ones on a cluster.
#include "orchestrator/placement.h"

#include "orchestrator/ports.h"

#include <boost/json.hpp>

#include <map>

#include "orchestrator_test_support.h"

namespace gym::orchestrator {
namespace {

namespace json = boost::json;
using testing::config_error_of;

void add_instance(json::object& cfg, const std::string& name, const std::string& type,
                  const std::string& impl, json::object block = {}) {
  cfg[name] = json::object{{type, json::object{{impl, std::move(block)}}}};
}

std::string host_of(const json::object& cfg, const std::string& name) {
  const auto& types = cfg.at(name).as_object();
  const auto& block = types.begin()->value().as_object().begin()->value().as_object();
  return std::string(block.at("host").as_string());
}

// `scontrol` as a two-node job on n1/n2 answers it; records every call.
struct FakeSlurm {
  std::vector<std::string> calls;
  std::map<std::string, std::string> env{
      {"SLURM_JOB_ID", "42"}, {"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURMD_NODENAME", "n1"}};
  CommandRunner runner() {
    return [this](const std::vector<std::string>& argv) {
      std::string line;
      for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
      calls.push_back(line);
      if (line == "scontrol show hostnames n[1-2]") return CommandOutput{0, "n1\nn2\n"};
      if (line == "scontrol show node -o n1")
        return CommandOutput{0, "NodeName=n1 Arch=x86_64 NodeAddr=10.9.0.11 NodeHostName=n1\n"};
      if (line == "scontrol show node -o n2")
        return CommandOutput{0, "NodeName=n2 Arch=x86_64 NodeAddr=10.9.0.12 NodeHostName=n2\n"};
      return CommandOutput{1, "slurm_load_jobs error: Invalid job id specified\n"};
    };
  }
  std::function<const char*(const char*)> getenv() {
    return [this](const char* name) -> const char* {
      auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    };
  }
};

TEST(AllocationNodes, OutsideSlurmIsThisMachineAlone) {
  FakeSlurm slurm;
  slurm.env.clear();
  auto a = allocation_nodes(slurm.getenv(), slurm.runner());
  ASSERT_EQ(a.nodes.size(), 1u);
  EXPECT_EQ(a.nodes[0].address, core::this_machine_address());
  EXPECT_TRUE(a.driver_on_first);
  EXPECT_TRUE(slurm.calls.empty());
}

TEST(AllocationNodes, TheJobsNodesWithTheirAddressesTheDriversFirst) {
  FakeSlurm slurm;
  auto a = allocation_nodes(slurm.getenv(), slurm.runner());
  ASSERT_EQ(a.nodes.size(), 2u);
  EXPECT_EQ(a.nodes[0].name, "n1");
  EXPECT_EQ(a.nodes[0].address, "10.9.0.11");
  EXPECT_EQ(a.nodes[1].address, "10.9.0.12");
  EXPECT_TRUE(a.driver_on_first);
  slurm.env["SLURMD_NODENAME"] = "n2";  // the batch script runs on n2
  a = allocation_nodes(slurm.getenv(), slurm.runner());
  EXPECT_EQ(a.nodes[0].name, "n2");
  EXPECT_EQ(a.nodes[1].name, "n1");
  EXPECT_TRUE(a.driver_on_first);
}

// `salloc -N2` keeps the user's shell on the login node: no SLURMD_NODENAME there, so every
// server runs on an allocated node through srun, still round robin.
TEST(AllocationNodes, FromALoginNodeEveryServerIsRemote) {
  FakeSlurm slurm;
  slurm.env.erase("SLURMD_NODENAME");
  auto a = allocation_nodes(slurm.getenv(), slurm.runner());
  EXPECT_FALSE(a.driver_on_first);
  json::object cfg;
  add_instance(cfg, "env", "resources_servers", "mcqa");
  add_instance(cfg, "agent", "responses_api_agents", "simple_agent");
  auto p = place_servers(core::find_server_instances(cfg), a);
  EXPECT_TRUE(p.remote("env"));
  EXPECT_TRUE(p.remote("agent"));
  EXPECT_EQ(p.node("env").name, "n1");
  EXPECT_EQ(p.node("agent").name, "n2");
}

TEST(AllocationNodes, AFailingScontrolSaysWhatItRanAndWhatItPrinted) {
  FakeSlurm slurm;
  slurm.env["SLURM_JOB_NODELIST"] = "gpu[1-9]";
  try {
    allocation_nodes(slurm.getenv(), slurm.runner());
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("scontrol show hostnames gpu[1-9]"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Invalid job id"), std::string::npos);
  }
}

TEST(PlaceServers, RoundRobinFromTheDriversNodeAndPinsByNameOrIndex) {
  json::object cfg;
  add_instance(cfg, "policy_model", "responses_api_models", "replay_model");
  add_instance(cfg, "env", "resources_servers", "mcqa");
  add_instance(cfg, "agent", "responses_api_agents", "simple_agent");
  add_instance(cfg, "pinned", "resources_servers", "mcqa", json::object{{"slurm_node", "n1"}});
  add_instance(cfg, "by_index", "resources_servers", "mcqa", json::object{{"slurm_node", 1}});
  const Allocation nodes{{{"n1", "10.9.0.11"}, {"n2", "10.9.0.12"}}, true};
  auto p = place_servers(core::find_server_instances(cfg), nodes);
  EXPECT_EQ(p.node("policy_model").name, "n1");
  EXPECT_EQ(p.node("env").name, "n2");
  EXPECT_EQ(p.node("agent").name, "n1");
  EXPECT_EQ(p.node("pinned").name, "n1");
  EXPECT_EQ(p.node("by_index").name, "n2");
  EXPECT_FALSE(p.remote("agent"));
  EXPECT_TRUE(p.remote("env"));

  apply_placement_hosts(cfg, core::find_server_instances(cfg), p);
  EXPECT_EQ(host_of(cfg, "env"), "10.9.0.12");
  EXPECT_EQ(host_of(cfg, "agent"), "10.9.0.11");
}

TEST(PlaceServers, AnExplicitHostIsKept) {
  json::object cfg;
  add_instance(cfg, "env", "resources_servers", "mcqa", json::object{{"host", "0.0.0.0"}});
  const Allocation nodes{{{"n1", "10.9.0.11"}}, true};
  auto instances = core::find_server_instances(cfg);
  apply_placement_hosts(cfg, instances, place_servers(instances, nodes));
  EXPECT_EQ(host_of(cfg, "env"), "0.0.0.0");
}

TEST(PlaceServers, APinOutsideTheAllocationIsAConfigErrorListingTheNodes) {
  const Allocation nodes{{{"n1", "a"}, {"n2", "b"}}, true};
  json::object cfg;
  add_instance(cfg, "env", "resources_servers", "mcqa", json::object{{"slurm_node", "n3"}});
  auto msg = config_error_of([&] { place_servers(core::find_server_instances(cfg), nodes); });
  EXPECT_NE(msg.find("env.resources_servers.mcqa.slurm_node = n3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("n1, n2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean n1"), std::string::npos) << msg;
  add_instance(cfg, "env", "resources_servers", "mcqa", json::object{{"slurm_node", 2}});
  msg = config_error_of([&] { place_servers(core::find_server_instances(cfg), nodes); });
  EXPECT_NE(msg.find("indexes 0-1"), std::string::npos) << msg;
  add_instance(cfg, "env", "resources_servers", "mcqa", json::object{{"slurm_node", 1.5}});
  msg = config_error_of([&] { place_servers(core::find_server_instances(cfg), nodes); });
  EXPECT_NE(msg.find("node name or a 0-based index"), std::string::npos) << msg;
}

TEST(AssignPorts, RemoteInstancesGetDistinctPortsWithoutALocalCheck) {
  json::object cfg;
  cfg["head_server"] = json::object{{"port", 0}};
  // 192.0.2.1 (TEST-NET-1) is no address of this machine: a local bind there would fail.
  add_instance(cfg, "a", "resources_servers", "mcqa", json::object{{"host", "192.0.2.1"}});
  add_instance(cfg, "b", "resources_servers", "mcqa", json::object{{"host", "192.0.2.1"}});
  assign_ports(cfg, core::find_server_instances(cfg), {}, nullptr, {"a", "b"});
  const auto pa = cfg.at("a").at("resources_servers").at("mcqa").at("port").as_int64();
  const auto pb = cfg.at("b").at("resources_servers").at("mcqa").at("port").as_int64();
  EXPECT_NE(pa, pb);
  EXPECT_GE(pa, 10001);
  EXPECT_LE(pa, 20000);
}

TEST(SrunCommand, OneOverlappingTaskOnTheNodeNamedAfterTheInstance) {
  const auto argv = srun_command({"n2", "10.9.0.12"}, "env");
  EXPECT_EQ(argv.at(0), "srun");
  auto has = [&](const std::string& a) {
    return std::find(argv.begin(), argv.end(), a) != argv.end();
  };
  EXPECT_TRUE(has("--overlap"));
  EXPECT_TRUE(has("--nodelist=n2"));
  EXPECT_TRUE(has("--ntasks=1"));
  EXPECT_TRUE(has("--job-name=env"));
}

TEST(RunCommand, ExitCodeAndOutputAndAMissingProgram) {
  auto r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.output.find("out"), std::string::npos);
  EXPECT_NE(r.output.find("err"), std::string::npos);
  // posix_spawnp reports a missing program as the child's exit 127 or as an error.
  try {
    auto missing = run_command({"gym-no-such-program-xyz"});
    EXPECT_EQ(missing.exit_code, 127);
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("gym-no-such-program-xyz"), std::string::npos);
  }
}

}  // namespace
}  // namespace gym::orchestrator
