// `gym env start` / `gym env status` as real processes (docs/design/processes.md).
#include "conformance_dir.h"
#include "core/yaml_json.h"
#include "process.h"
#include "reserved_port.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

namespace fs = std::filesystem;
namespace json = boost::json;
using gym::test::ChildProcess;

namespace {

std::string gym_binary() { return gym::test::build_path("src/cli/gym"); }

using gym::test::run_command;
auto run = run_command;

std::string write_config(const std::string& text) {
  char tmpl[] = "/tmp/gym-orch-test-XXXXXX.yaml";
  int fd = ::mkstemps(tmpl, 5);
  ::close(fd);
  std::ofstream(tmpl) << text;
  return tmpl;
}

constexpr const char* kWeather =
    "weather:\n  resources_servers:\n    example_single_tool_call:\n      domain: agent\n";

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

// Waits (bounded, a hang guard) until `pid` no longer exists.
bool gone_within(pid_t pid, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (alive(pid)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// A started deployment: the orchestrator process and its head server's port.
struct Deployment {
  const gym::test::ReservedPort head_port_reserved;
  const int head_port = head_port_reserved.port();
  std::unique_ptr<ChildProcess> proc;
  json::array instances;

  explicit Deployment(const std::string& config) {
    proc = std::make_unique<ChildProcess>(
        std::vector<std::string>{gym_binary(), "env", "start", "--config", config,
                                 "++head_server.port=" + std::to_string(head_port)},
        std::vector<std::string>{}, /*merge_stderr=*/true);
  }
  bool ready() { return !proc->wait_for_line("All ").empty(); }
  json::value head_get(const std::string& path) {
    auto raw = gym::test::http_raw(head_port, "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
    return json::parse(gym::test::body_of(raw));
  }
};

}  // namespace

TEST(Orchestrator, StartsServersAndServesTheHeadRoutes) {
  auto config = write_config(kWeather);
  Deployment d(config);
  ASSERT_TRUE(d.ready()) << d.proc->output();
  auto listing = d.head_get("/server_instances");
  auto& instances = listing.as_array();
  ASSERT_EQ(instances.size(), 1u);
  auto& w = instances[0].as_object();
  EXPECT_EQ(w.at("process_name"), "weather");
  EXPECT_EQ(w.at("config_path"), "weather");
  EXPECT_EQ(w.at("server_type"), "resources_servers");
  EXPECT_EQ(w.at("name"), "example_single_tool_call");
  EXPECT_TRUE(w.at("dir_path").is_null());
  EXPECT_TRUE(w.at("start_time").is_double());
  pid_t pid = static_cast<pid_t>(w.at("pid").to_number<int>());
  int port = w.at("port").to_number<int>();
  EXPECT_EQ(w.at("url").as_string(), "http://127.0.0.1:" + std::to_string(port));
  EXPECT_TRUE(alive(pid));
  // The server is the gym binary itself in its own process group.
  EXPECT_EQ(::getpgid(pid), pid);
  auto tool = gym::test::http_raw(port, gym::test::post("/get_weather", R"({"city":"Oslo"})"));
  EXPECT_EQ(gym::test::status_of(tool), 200);

  // A NeMo Gym client decodes a JSON string, then parses the YAML.
  auto yaml = d.head_get("/global_config_dict_yaml");
  ASSERT_TRUE(yaml.is_string());
  auto merged = gym::core::parse_yaml(yaml.as_string(), "head").as_object();
  EXPECT_EQ(merged.at("weather").at("resources_servers").at("example_single_tool_call").at("port"),
            json::value(port));
  EXPECT_EQ(merged.at("head_server").at("port"), json::value(d.head_port));
  EXPECT_TRUE(merged.at("disallowed_ports").is_array());

  auto status = run(gym_binary() + " env status ++head_server.port=" + std::to_string(d.head_port));
  EXPECT_EQ(status.code, 0);
  EXPECT_NE(status.output.find("weather (resources_servers/example_single_tool_call)"),
            std::string::npos)
      << status.output;
  EXPECT_NE(status.output.find("1 servers found (1 healthy, 0 unhealthy)"), std::string::npos);
  auto status_json =
      run(gym_binary() + " env status --json ++head_server.port=" + std::to_string(d.head_port));
  auto listed = json::parse(status_json.output.substr(status_json.output.find('['))).as_array();
  EXPECT_EQ(listed.at(0).at("status"), "success");
  EXPECT_TRUE(listed.at(0).at("uptime_seconds").is_double());

  d.proc->signal(SIGTERM);
  EXPECT_EQ(d.proc->wait_exit(), 143);
  EXPECT_TRUE(gone_within(pid, std::chrono::seconds(10)));
  fs::remove(config);
}

TEST(Orchestrator, SigintExits130AndStopsEveryServer) {
  auto config = write_config(std::string(kWeather) +
                             "weather2:\n  resources_servers:\n    example_single_tool_call:\n"
                             "      domain: agent\n      num_workers: 2\n");
  Deployment d(config);
  ASSERT_TRUE(d.ready()) << d.proc->output();
  std::vector<pid_t> pids;
  auto listed = d.head_get("/server_instances");
  for (auto& v : listed.as_array())
    pids.push_back(static_cast<pid_t>(v.at("pid").to_number<int>()));
  ASSERT_EQ(pids.size(), 2u);
  d.proc->signal(SIGINT);
  EXPECT_EQ(d.proc->wait_exit(), 130);
  for (auto pid : pids) EXPECT_TRUE(gone_within(pid, std::chrono::seconds(10)));
  fs::remove(config);
}

TEST(Orchestrator, SigkilledOrchestratorLeavesNoServer) {
  auto config = write_config(std::string(kWeather) + "      num_workers: 2\n");
  Deployment d(config);
  ASSERT_TRUE(d.ready()) << d.proc->output();
  auto listing = d.head_get("/server_instances");
  pid_t root = static_cast<pid_t>(listing.at(0).at("pid").to_number<int>());
  // The workers of the root, from /proc.
  std::vector<pid_t> workers;
  std::ifstream children("/proc/" + std::to_string(root) + "/task/" + std::to_string(root) +
                         "/children");
  for (pid_t p; children >> p;) workers.push_back(p);
  EXPECT_EQ(workers.size(), 2u);
  d.proc->signal(SIGKILL);
  d.proc->wait_exit();
  EXPECT_TRUE(gone_within(root, std::chrono::seconds(10)));
  for (auto w : workers) EXPECT_TRUE(gone_within(w, std::chrono::seconds(10)));
  fs::remove(config);
}

TEST(Orchestrator, ServerThatFailsAtStartupAbortsWithItsOutputAndCode2) {
  // An invalid instance value is only read by the server itself, which exits at once.
  auto config = write_config(std::string(kWeather) + "      http_max_request_body_bytes: -5\n");
  auto r = run(gym_binary() + " env start --config " + config + " ++head_server.port=0");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("server weather exited during start-up with code 1"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("http_max_request_body_bytes"), std::string::npos) << r.output;
  fs::remove(config);
}

TEST(Orchestrator, BusyServerPortIsAStartupFailure) {
  ChildProcess holder({gym::test::build_path("tests/support/gym_test_server"), "--port", "0"});
  int busy = holder.wait_port();
  ASSERT_GT(busy, 0);
  auto config = write_config(std::string(kWeather) + "      port: " + std::to_string(busy) + "\n");
  auto r = run(gym_binary() + " env start --config " + config + " ++head_server.port=0");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("port " + std::to_string(busy) + " of server weather is already in use"),
            std::string::npos)
      << r.output;
  fs::remove(config);
}

TEST(Orchestrator, BusyHeadPortIsAStartupFailure) {
  ChildProcess holder({gym::test::build_path("tests/support/gym_test_server"), "--port", "0"});
  int busy = holder.wait_port();
  auto config = write_config(kWeather);
  auto r = run(gym_binary() + " env start --config " + config +
               " ++head_server.port=" + std::to_string(busy));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("head server"), std::string::npos) << r.output;
  // issue 13.12: what to do about it.
  EXPECT_NE(r.output.find("choose another port: ++head_server.port="), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("gym eval run --no-serve"), std::string::npos) << r.output;
  fs::remove(config);
}

TEST(Orchestrator, ConfigErrorsExit1BeforeStartingAnything) {
  auto unknown =
      write_config("weather:\n  resources_servers:\n    no_such_env:\n      domain: agent\n");
  auto r = run(gym_binary() + " env start --config " + unknown);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("example_single_tool_call"), std::string::npos)
      << r.output;  // built-ins listed
  auto empty = write_config("policy_model_name: x\n");
  auto none = run(gym_binary() + " env start --config " + empty);
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.output.find("no server instance"), std::string::npos) << none.output;
  auto selector = run(gym_binary() + " env start --resources-server example_single_tool_cal");
  EXPECT_EQ(selector.code, 1);
  EXPECT_NE(selector.output.find("did you mean 'example_single_tool_call'"), std::string::npos)
      << selector.output;
  fs::remove(unknown);
  fs::remove(empty);
}

TEST(Orchestrator, StatusWithoutDeploymentAndLegacyName) {
  const gym::test::ReservedPort port_reserved;
  const int port = port_reserved.port();
  auto r = run(gym::test::build_path("src/cli/ng_status") +
               " ++head_server.port=" + std::to_string(port));
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("No NeMo Gym servers found running."), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("deprecated"), std::string::npos) << r.output;
  auto j = run(gym_binary() + " env status --json ++head_server.port=" + std::to_string(port));
  EXPECT_NE(j.output.find("[]"), std::string::npos) << j.output;
}

namespace {

std::string model_config(const std::string& base_url) {
  const std::string data = gym::test::conformance_dir();
  return write_config(std::string(kWeather) +
                      "policy_model:\n  responses_api_models:\n    replay_model:\n"
                      "      rollouts_jsonl_fpaths: [" +
                      data +
                      "/example_single_tool_call/example_rollouts.jsonl]\n"
                      "      upstream_base_url: " +
                      base_url + "\n");
}

}  // namespace

TEST(Orchestrator, ModelEndpointThatAnswersLetsStartupFinish) {
  ChildProcess endpoint({gym::test::build_path("tests/support/gym_test_server"), "--port", "0"});
  int port = endpoint.wait_port();
  ASSERT_GT(port, 0);
  // Any HTTP answer counts, here a 404 for /v1/models.
  auto config = model_config("http://127.0.0.1:" + std::to_string(port) + "/v1/");
  Deployment d(config);
  EXPECT_TRUE(d.ready()) << d.proc->output();
  fs::remove(config);
}

TEST(Orchestrator, ModelEndpointThatNeverAnswersAbortsNamingTheKey) {
  const gym::test::ReservedPort silent;  // bound, not listening: refuses
  auto config = model_config("http://127.0.0.1:" + silent.text() + "/v1");
  auto r = run(gym_binary() + " env start --config " + config +
               " ++head_server.port=0 ++model_endpoint_readiness_timeout_seconds=1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("policy_model.responses_api_models.replay_model.upstream_base_url"),
            std::string::npos)
      << r.output;
  fs::remove(config);
}

TEST(Orchestrator, LargeConfigTravelsThroughAPrivateFile) {
  // Over 96 KiB of YAML does not go into one environment variable (Linux allows 128 KiB).
  auto config =
      write_config(std::string(kWeather) + "padding: " + std::string(120 * 1024, 'x') + "\n");
  Deployment d(config);
  ASSERT_TRUE(d.ready()) << d.proc->output();
  auto listing = d.head_get("/server_instances");
  pid_t pid = static_cast<pid_t>(listing.at(0).at("pid").to_number<int>());
  std::ifstream environ_file("/proc/" + std::to_string(pid) + "/environ");
  std::string env((std::istreambuf_iterator<char>(environ_file)), {});
  auto pos = env.find("NEMO_GYM_CONFIG_DICT_FILE=");
  ASSERT_NE(pos, std::string::npos);
  std::string path = env.substr(pos + 26, env.find('\0', pos) - pos - 26);
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  d.proc->signal(SIGTERM);
  EXPECT_EQ(d.proc->wait_exit(), 143);
  EXPECT_FALSE(fs::exists(path));  // removed at shutdown
  fs::remove(config);
}

TEST(Orchestrator, AServerThatDiesStopsTheDeploymentWithCode2) {
  auto config = write_config(std::string(kWeather) +
                             "weather2:\n  resources_servers:\n    example_single_tool_call:\n"
                             "      domain: agent\n");
  Deployment d(config);
  ASSERT_TRUE(d.ready()) << d.proc->output();
  auto listing = d.head_get("/server_instances");
  pid_t victim = static_cast<pid_t>(listing.at(0).at("pid").to_number<int>());
  pid_t survivor = static_cast<pid_t>(listing.at(1).at("pid").to_number<int>());
  ::kill(victim, SIGKILL);
  EXPECT_EQ(d.proc->wait_exit(), 2);
  EXPECT_TRUE(gone_within(survivor, std::chrono::seconds(10)));  // the others are stopped too
  // issue 13.11: the signal, not "code 137".
  d.proc->drain();
  EXPECT_NE(d.proc->output().find("exited unexpectedly, killed by signal 9 (SIGKILL)"),
            std::string::npos)
      << d.proc->output();
  fs::remove(config);
}

namespace {

// The NEMO_GYM_OTEL_* variables in a process's environment.
std::vector<std::string> otel_environment(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::vector<std::string> out;
  for (std::string entry; std::getline(in, entry, '\0');)
    if (entry.rfind("NEMO_GYM_OTEL_", 0) == 0) out.push_back(entry);
  return out;
}

}  // namespace

// With telemetry on, the orchestrator adds exactly NEMO_GYM_OTEL_RUN_ID to every child's
// environment (one run id for the deployment); with it off, nothing.
TEST(Orchestrator, ChildrenGetOnlyTheRunIdOfTheDeployment) {
  for (bool on : {true, false}) {
    auto config = write_config(std::string(kWeather) +
                               "other:\n  resources_servers:\n    example_single_tool_call:\n"
                               "      domain: agent\ntelemetry:\n  enabled: " +
                               (on ? "true" : "false") + "\n  run_id: deploy42\n");
    Deployment d(config);
    ASSERT_TRUE(d.ready()) << d.proc->output();
    auto listing = d.head_get("/server_instances");
    ASSERT_EQ(listing.as_array().size(), 2u);
    for (const auto& inst : listing.as_array()) {
      pid_t pid = static_cast<pid_t>(inst.at("pid").to_number<int>());
      auto vars = otel_environment(pid);
      if (on) {
        EXPECT_EQ(vars, std::vector<std::string>{"NEMO_GYM_OTEL_RUN_ID=deploy42"}) << inst;
      } else {
        EXPECT_TRUE(vars.empty()) << inst;
      }
    }
    d.proc->signal(SIGTERM);
    d.proc->wait_exit();
    fs::remove(config);
  }
  // An invalid telemetry value is a config error naming the key; nothing starts.
  auto bad = write_config(std::string(kWeather) + "telemetry:\n  enabled: maybe\n");
  auto r = run(gym_binary() + " env start --config " + bad);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("enabled"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("servers ready"), std::string::npos) << r.output;
  fs::remove(bad);
}

TEST(Orchestrator, HeadServerPortZeroReportsThePortItGot) {
  auto config = write_config(kWeather);
  ChildProcess proc({gym_binary(), "env", "start", "--config", config, "++head_server.port=0"});
  const auto line = proc.wait_for_line("Head server at http://127.0.0.1:");
  ASSERT_FALSE(line.empty()) << proc.output();
  const int port = std::atoi(line.c_str());
  ASSERT_GT(port, 0) << line;
  ASSERT_FALSE(proc.wait_for_line("All ").empty()) << proc.output();
  auto raw = gym::test::http_raw(port, "GET /global_config_dict_yaml HTTP/1.1\r\nHost: x\r\n\r\n");
  auto yaml = json::parse(gym::test::body_of(raw));
  auto merged = gym::core::parse_yaml(yaml.as_string(), "head").as_object();
  EXPECT_EQ(merged.at("head_server").at("port"), json::value(port));
  proc.signal(SIGTERM);
  EXPECT_EQ(proc.wait_exit(), 143);
}
