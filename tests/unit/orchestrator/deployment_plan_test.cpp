// What a deployment decides before anything runs: orchestrator/deployment_plan.h. Nothing is
// started; the ports the plan chooses are only held.
#include "orchestrator/deployment_plan.h"

#include "http/session_cookie.h"

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "orchestrator_test_support.h"

namespace gym::orchestrator {
namespace {

namespace json = boost::json;
using testing::TempDir;

const core::ImplCatalog kCatalog{{"resources_servers", {"fake_resources"}},
                                 {"responses_api_models", {"fake_model"}},
                                 {"responses_api_agents", {"fake_agent"}}};

constexpr const char* kTwoServers = R"(head_server: {host: 127.0.0.1, port: 0}
my_resources:
  resources_servers:
    fake_resources: {domain: other}
my_model:
  responses_api_models:
    fake_model: {}
)";

class PlanDeployment : public ::testing::Test {
 protected:
  DeploymentPlan plan(const std::string& yaml, std::map<std::string, std::string> env = {}) {
    core::ConfigSources sources;
    sources.config_paths = {dir_.write("config.yaml", yaml)};
    sources.search_roots = {dir_.path()};
    sources.load_env_yaml = false;
    getenv_ = [env](const std::string& name) -> std::optional<std::string> {
      auto it = env.find(name);
      return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    sources.getenv = getenv_;
    return plan_deployment(sources, kCatalog, telemetry::PipelineFactory{}, getenv_);
  }

  // The value of `name` in `env` (KEY=VALUE lines), or none.
  static std::optional<std::string> value_in(const std::vector<std::string>& env,
                                             const std::string& name) {
    for (const auto& entry : env)
      if (entry.rfind(name + "=", 0) == 0) return entry.substr(name.size() + 1);
    return std::nullopt;
  }

  TempDir dir_;
  core::GetEnv getenv_;
};

TEST_F(PlanDeployment, EveryServerGetsAHostAHeldPortAndTheEnvironment) {
  const auto p = plan(kTwoServers);
  ASSERT_EQ(p.instances.size(), 2u);
  std::set<std::int64_t> ports;
  for (const auto& inst : p.instances) {
    EXPECT_EQ(inst.config.at("host").as_string(), "127.0.0.1") << inst.name;
    const auto port = inst.config.at("port").to_number<std::int64_t>();
    EXPECT_GT(port, 0) << inst.name;
    ports.insert(port);
    // The merged config says the same as the instance.
    EXPECT_EQ(p.config.at(inst.name).at(inst.server_type).at(inst.impl).at("port"),
              inst.config.at("port"));
  }
  EXPECT_EQ(ports.size(), 2u) << "two servers, two ports";
  EXPECT_EQ(p.port_holds.size(), 2u) << "each chosen port is held until its server listens";
  for (const auto& hold : p.port_holds) EXPECT_TRUE(ports.count(hold.port()));
  EXPECT_FALSE(p.placement.remote("my_resources"));
  // Every server gets the deployment's cookie key and its part of the shutdown bound.
  const auto key = value_in(p.child_env, http::kSessionKeyVariable);
  ASSERT_TRUE(key);
  EXPECT_GE(key->size(), 32u);
  EXPECT_TRUE(value_in(p.child_env, telemetry::kShutdownBoundVariable));
  // One key per deployment: another plan gets another.
  EXPECT_NE(value_in(plan(kTwoServers).child_env, http::kSessionKeyVariable), key);
}

TEST_F(PlanDeployment, ActiveTelemetryRecordsTheRunIdForTheCollectorAndTheServers) {
  const auto p = plan(kTwoServers, {{"NEMO_GYM_OTEL_ENABLED", "1"},
                                    {"OTEL_METRICS_EXPORTER", "console"},
                                    {"NEMO_GYM_OTEL_RUN_ID", "run-42"}});
  EXPECT_EQ(p.run_id, "run-42");
  EXPECT_EQ(p.config.at("telemetry").at("run_id"), "run-42");
  const bool servers_get_it =
      std::any_of(p.child_env.begin(), p.child_env.end(),
                  [](const std::string& entry) { return entry.ends_with("=run-42"); });
  EXPECT_TRUE(servers_get_it);
}

TEST_F(PlanDeployment, NoServerOrAnUnknownImplementationIsAConfigErrorBeforeAnythingStarts) {
  EXPECT_CONTAINS(testing::config_error_of([&] { plan("head_server: {port: 0}\n"); }),
                  "no server instance is configured");
  EXPECT_CONTAINS(testing::config_error_of([&] {
                    plan("r:\n  resources_servers:\n    nonexistent_impl: {domain: other}\n");
                  }),
                  "nonexistent_impl");
}

}  // namespace
}  // namespace gym::orchestrator
