// POST /aggregate_metrics on a real `gym serve` of example_single_tool_call
// (docs/reference/aggregate-metrics.md): the response shape, the conformance key metrics, and
// errors as 422/500 without harming the server.
#include "conformance_dir.h"
#include "process.h"
#include "reserved_port.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace json = boost::json;
using gym::test::ChildProcess;
using gym::test::conformance_dir;

namespace {

class WeatherServer {
 public:
  WeatherServer()
      : port_(reserved_.port()),
        process_({gym::test::build_path("src/cli/gym"), "serve"},
                 {"NEMO_GYM_CONFIG_DICT=weather:\n  resources_servers:\n    "
                  "example_single_tool_call:\n      domain: agent\n      port: " +
                      std::to_string(port_) + "\n",
                  "NEMO_GYM_CONFIG_PATH=weather"}) {
    for (int i = 0; i < 400 && status("GET / HTTP/1.1\r\nHost: x\r\n\r\n") < 0; ++i)
      ::usleep(25'000);
  }
  ~WeatherServer() {
    process_.signal(SIGTERM);
    process_.wait_exit();
  }

  int status(const std::string& request) {
    return gym::test::status_of(gym::test::http_raw(port_, request));
  }
  std::string post(const std::string& body, int* status_out) {
    auto raw = gym::test::http_raw(port_, gym::test::post("/aggregate_metrics", body));
    *status_out = gym::test::status_of(raw);
    return gym::test::body_of(raw);
  }

 private:
  gym::test::ReservedPort reserved_;  // held while the server runs
  int port_;
  ChildProcess process_;
};

}  // namespace

TEST(AggregateMetricsServe, ResponseShape) {
  WeatherServer server;
  int status = 0;
  auto body = server.post(
      R"({"verify_responses":[{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"response":{"usage":{"input_tokens":244}}},{"_ng_task_index":1,"_ng_rollout_index":0,"reward":0.0,"response":{"usage":{"input_tokens":100}}}]})",
      &status);
  ASSERT_EQ(status, 200) << body;
  auto out = json::parse(body).as_object();
  ASSERT_EQ(out.size(), 3u) << body;
  auto it = out.begin();
  EXPECT_EQ((it++)->key(), "group_level_metrics");
  EXPECT_EQ((it++)->key(), "agent_metrics");
  EXPECT_EQ(it->key(), "key_metrics");
  EXPECT_EQ(out.at("group_level_metrics").as_array().size(), 2u);
  EXPECT_NE(body.find(R"("key_metrics":{"mean/reward":0.5,"mean/input_tokens":172.0})"),
            std::string::npos)
      << body;
  EXPECT_NE(
      body.find(
          R"("rollout_infos":[{"rollout_id":"1:0","_ng_task_index":1,"_ng_rollout_index":0,"reward":0.0,"input_tokens":100}])"),
      std::string::npos)
      << body;
}

TEST(AggregateMetricsServe, ConformanceKeyMetrics) {
  // example_single_tool_call's recorded rollouts give mean reward 1.0, input_tokens 88.0,
  // output_tokens 38.0, total_tokens 126.0.
  auto path = std::filesystem::path(conformance_dir()) / "example_single_tool_call" /
              "example_rollouts.jsonl";
  ASSERT_TRUE(std::filesystem::exists(path))
      << "conformance data missing: " << path
      << " (set GYM_CONFORMANCE_DIR to the shared/data/conformance directory)";
  std::ifstream in(path);
  json::array rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    auto recorded = json::parse(line).as_object();
    json::object vr;
    vr["response"] = json::object{{"usage", recorded.at("response").at("usage")}};
    vr["reward"] = recorded.at("reward");
    vr["_ng_task_index"] = static_cast<std::int64_t>(rows.size());
    vr["_ng_rollout_index"] = 0;
    rows.push_back(std::move(vr));
  }
  ASSERT_EQ(rows.size(), 5u);
  WeatherServer server;
  int status = 0;
  auto body = server.post(json::serialize(json::object{{"verify_responses", rows}}), &status);
  ASSERT_EQ(status, 200) << body;
  EXPECT_NE(
      body.find(
          R"("key_metrics":{"mean/reward":1.0,"mean/input_tokens":88.0,"mean/output_tokens":38.0,"mean/total_tokens":126.0})"),
      std::string::npos)
      << body;
}

TEST(AggregateMetricsServe, ErrorsAre422And500AndTheServerGoesOn) {
  WeatherServer server;
  int status = 0;
  auto body = server.post(R"({"verify_responses":"no"})", &status);
  EXPECT_EQ(status, 422) << body;
  body = server.post(R"({"verify_responses":[{"reward":1.0},{"reward":0.0}]})", &status);
  EXPECT_EQ(status, 500);
  EXPECT_EQ(body, R"j("ValueError: Duplicate materialized input row for rollout key (0, 0)")j");
  body = server.post(R"({"verify_responses":[]})", &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(body, R"({"group_level_metrics":[],"agent_metrics":{},"key_metrics":{}})");
}
