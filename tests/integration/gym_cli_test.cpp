// The gym binary as users and the orchestrator run it: config errors, `gym serve` configured
// through NEMO_GYM_CONFIG_DICT, and the demo's end-to-end run.
#include "process.h"
#include "reserved_port.h"
#include "temp_dir.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

namespace fs = std::filesystem;
using gym::test::ChildProcess;
using gym::test::TempDir;

namespace {

std::string gym_binary() { return gym::test::build_path("src/cli/gym"); }

gym::test::CommandResult run_gym(const std::string& args) {
  return gym::test::run_command(gym_binary() + " " + args);
}

constexpr const char* kWeather = R"(weather:
  resources_servers:
    example_single_tool_call:
      domain: agent
)";

}  // namespace

TEST(GymCli, ConfigShowMergesFilesAndOverrides) {
  TempDir dir;
  auto base = dir.write("base.yaml", std::string(kWeather) + "policy_model_name: small\n");
  auto r = run_gym("config show --config " + base + " ++policy_model_name=large +extra.list=[1,2]");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("policy_model_name: large"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("weather:"), std::string::npos);
  EXPECT_NE(r.output.find("head_server:"), std::string::npos);  // defaults filled
}

TEST(GymCli, UnknownImplementationListsTheBuiltIns) {
  TempDir dir;
  auto cfg = dir.write("bad.yaml",
                       "weather:\n  resources_servers:\n    example_single_tool_cal:\n"
                       "      domain: agent\n");
  auto r = run_gym("config show --config " + cfg);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("example_single_tool_cal"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("example_single_tool_call"), std::string::npos) << r.output;
}

TEST(GymCli, MisspeltReferenceGetsADidYouMeanHint) {
  TempDir dir;
  auto cfg = dir.write("ref.yaml", std::string(kWeather) +
                                       "agent_ref:\n  resources_server:\n"
                                       "    type: resources_servers\n    name: wether\n");
  auto r = run_gym("config show --config " + cfg);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("did you mean 'weather'"), std::string::npos) << r.output;
}

TEST(GymCli, MissingValuesAreReportedTogether) {
  TempDir dir;
  auto cfg = dir.write("missing.yaml", "a: ???\nb:\n  c: ???\n");
  auto r = run_gym("config show --config " + cfg);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("b.c"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("a"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(cfg), std::string::npos) << r.output;  // names the file
}

TEST(GymCli, MissingConfigFileIsAClearError) {
  auto r = run_gym("config show --config /nonexistent/gym.yaml");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("/nonexistent/gym.yaml"), std::string::npos) << r.output;
}

TEST(GymCli, ServeReadsTheConfigFromTheEnvironment) {
  const gym::test::ReservedPort port_reserved;
  const int port = port_reserved.port();
  std::string yaml = std::string(kWeather) + "      port: " + std::to_string(port) + "\n";
  ChildProcess server({gym_binary(), "serve"},
                      {"NEMO_GYM_CONFIG_DICT=" + yaml, "NEMO_GYM_CONFIG_PATH=weather"});
  // Ready once it answers (any HTTP answer, as the orchestrator's readiness check).
  for (int i = 0; i < 400 && gym::test::status_of(gym::test::http_raw(
                                 port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")) < 0;
       ++i)
    ::usleep(25'000);
  ASSERT_GT(port, 0) << "server did not start listening";
  auto res = gym::test::http_raw(port, gym::test::post("/get_weather", R"({"city":"Zürich"})"));
  EXPECT_EQ(gym::test::status_of(res), 200);
  EXPECT_EQ(gym::test::body_of(res),
            R"({"city":"Zürich","weather_description":"The weather in Zürich is cold."})");
  EXPECT_NE(gym::test::header_of(res, "set-cookie").find("SimpleWeatherResourcesServer___weather="),
            std::string::npos);
  auto verify = gym::test::http_raw(
      port,
      gym::test::post("/verify",
                      R"({"responses_create_params":{"input":"hi"},"response":{"output":[]}})"));
  EXPECT_EQ(gym::test::status_of(verify), 200);
  // The echo carries every create-params field with its default.
  EXPECT_EQ(gym::test::body_of(verify),
            R"({"responses_create_params":{"background":null,"include":null,"input":"hi",)"
            R"("instructions":null,"max_output_tokens":null,"max_tool_calls":null,"metadata":null,)"
            R"("model":null,"parallel_tool_calls":true,"previous_response_id":null,"prompt":null,)"
            R"("reasoning":null,"service_tier":null,"store":null,"temperature":null,"text":null,)"
            R"("tool_choice":"auto","tools":[],"top_logprobs":null,"top_p":null,"truncation":null,)"
            R"("user":null,"stream":null},"response":{"output":[]},"reward":1.0})");
  auto missing = gym::test::http_raw(port, gym::test::post("/verify", R"({"response":{}})"));
  EXPECT_EQ(gym::test::status_of(missing), 422);
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_exit(), 0);
}

TEST(GymCli, ServeWithoutConfigIsAClearError) {
  auto r = run_gym("serve");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("NEMO_GYM_CONFIG_PATH"), std::string::npos) << r.output;
}

TEST(GymCli, DemoCollectsItsGeneratedDataAndNamesEveryFile) {
  TempDir dir;
  auto r = run_gym("demo --output-dir " + dir.path() +
                   " --tasks-per-env 10 --num-repeats 4 "
                   "++head_server.port=0");
  ASSERT_EQ(r.code, 0) << r.output;
  // Three environments, 10 tasks each, 4 rollouts per task, nothing failed.
  EXPECT_NE(r.output.find("Finished 120 / 120 rollouts (100%)"), std::string::npos) << r.output;
  for (const char* agent :
       {"mcqa_simple_agent", "example_multi_step_simple_agent", "string_match_simple_agent"})
    EXPECT_NE(r.output.find(std::string("Key metrics for ") + agent + ":"), std::string::npos)
        << agent;
  for (const char* file :
       {"/data/demo.jsonl", "/data/demo_rollouts.jsonl", "/rollouts/demo.jsonl",
        "/rollouts/demo_materialized_inputs.jsonl", "/rollouts/demo_aggregate_metrics.json"}) {
    EXPECT_TRUE(std::filesystem::exists(dir.path() + file)) << file;
    EXPECT_NE(r.output.find(dir.path() + file), std::string::npos) << "not named: " << file;
  }
  std::ifstream rollouts(dir.path() + "/rollouts/demo.jsonl");
  std::size_t lines = 0;
  for (std::string line; std::getline(rollouts, line);) ++lines;
  EXPECT_EQ(lines, 120u);

  // Telemetry is on in the demo: every process wrote console-exporter lines to one file, and the
  // demo ends with the report of that file.
  const std::string metrics = dir.path() + "/telemetry/metrics.jsonl";
  ASSERT_TRUE(std::filesystem::exists(metrics));
  EXPECT_NE(r.output.find(metrics), std::string::npos) << "not named: " << metrics;
  EXPECT_NE(r.output.find("rollouts (gym.rollout.duration_ms)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("memory (gym.server.memory."), std::string::npos) << r.output;
  // The same report as JSON: the figures the demo's 120 rollouts must give.
  auto report = run_gym("telemetry report --json " + metrics + " 2>/dev/null");
  ASSERT_EQ(report.code, 0) << report.output;
  const auto j = boost::json::parse(report.output).as_object();
  EXPECT_EQ(j.at("input").at("processes").to_number<int>(), 8) << "orchestrator + 7 servers";
  ASSERT_EQ(j.at("servers").as_array().size(), 1u);
  EXPECT_EQ(j.at("servers").at(0).at("last").to_number<int>(), 0) << "0 after shutdown";
  ASSERT_EQ(j.at("rollouts").as_array().size(), 3u);
  for (const auto& a : j.at("rollouts").as_array())
    EXPECT_EQ(a.at("count").to_number<int>(), 40) << boost::json::serialize(a);
  ASSERT_EQ(j.at("verification").as_array().size(), 3u) << report.output;
  for (const auto& v : j.at("verification").as_array()) {
    EXPECT_EQ(v.at("duration").at("count").to_number<int>(), 40) << boost::json::serialize(v);
    EXPECT_EQ(v.at("success_rates").at(0).at("value").to_number<double>(), 1.0);
  }
}

TEST(GymCli, TelemetryReportOfAMissingOrEmptyFileIsAnError) {
  auto missing = run_gym("telemetry report /nonexistent/metrics.jsonl");
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.output.find("cannot read '/nonexistent/metrics.jsonl'"), std::string::npos)
      << missing.output;
  TempDir dir;
  auto empty = run_gym("telemetry report " + dir.write("log.txt", "no metrics here\n"));
  EXPECT_EQ(empty.code, 1);
  EXPECT_NE(empty.output.find("no metrics export"), std::string::npos) << empty.output;
}

TEST(GymCli, DemoReportsAServerThatCannotStart) {
  ChildProcess holder({gym::test::build_path("tests/support/gym_test_server"), "--port", "0"});
  int port = holder.wait_port();
  ASSERT_GT(port, 0);
  TempDir dir;
  auto busy = run_gym("demo --tasks-per-env 5 --output-dir " + dir.path() +
                      " ++mcqa.resources_servers.mcqa.port=" + std::to_string(port));
  EXPECT_NE(busy.code, 0) << busy.output;
  EXPECT_NE(busy.output.find("already in use"), std::string::npos) << busy.output;
  EXPECT_NE(busy.output.find("mcqa"), std::string::npos) << busy.output;
}

// Issue 13, item 5: configs that made yaml-cpp 0.7.0 loop until the OOM killer, and a config
// path with no end, fail at once with a message. `timeout` turns a regression into a failure
// rather than a machine out of memory.
TEST(GymCli, ConfigThatHungTheYamlParserIsAClearError) {
  TempDir dir;
  auto comma = dir.write("comma.yaml", ",");
  auto r = gym::test::run_command("timeout 20 " + gym_binary() + " config show --config " + comma);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find(comma), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("YAML syntax error at line 1, column 1"), std::string::npos) << r.output;

  auto override_value =
      gym::test::run_command("timeout 20 " + gym_binary() + " config show --config " +
                             dir.write("ok.yaml", kWeather) + " '++a=,:'");
  EXPECT_EQ(override_value.code, 0) << override_value.output;
  EXPECT_NE(override_value.output.find("a: \",:\""), std::string::npos) << override_value.output;

  // An endless device is not read at all; a regular file is read up to the limit.
  auto device = gym::test::run_command("timeout 20 " + gym_binary() +
                                       " config show '++config_paths=[/dev/zero]'");
  EXPECT_EQ(device.code, 1) << device.output;
  EXPECT_NE(device.output.find("config file '/dev/zero' is a character device"), std::string::npos)
      << device.output;
  auto huge = gym::test::run_command("timeout 20 " + gym_binary() + " config show --config " +
                                     dir.write("huge.yaml", "a: " + std::string(17 << 20, 'x')));
  EXPECT_EQ(huge.code, 1) << huge.output;
  EXPECT_NE(huge.output.find("huge.yaml: more than 16 MiB of YAML"), std::string::npos)
      << huge.output.substr(0, 2000);
}
