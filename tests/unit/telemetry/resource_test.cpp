#include "telemetry/resource.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <boost/json.hpp>

#include "telemetry_test_support.h"

namespace gym::telemetry {
namespace {

using testing::FakeEnv;

std::string str(const Resource& r, std::string_view key) {
  const AttributeValue* v = r.attributes.find(key);
  if (!v) return "<absent>";
  return std::get<std::string>(*v);
}

std::int64_t num(const Resource& r, std::string_view key) {
  const AttributeValue* v = r.attributes.find(key);
  if (!v) return -1;
  return std::get<std::int64_t>(*v);
}

TEST(Resource, EveryAttributeOfSection4) {
  FakeEnv env;
  env.set("NEMO_GYM_OTEL_USER_ID", "alice");
  env.set("ENVIRONMENT", "staging");
  auto s = resolve_settings(boost::json::object{}, env.get());
  HostFacts host{"node-7", 41237};
  auto r = build_resource(s, "4f2a91c0be31", {"mcqa", "resources_servers"}, env.get(), host);
  EXPECT_EQ(str(r, "service.name"), "nemo-gym/mcqa");
  EXPECT_EQ(str(r, "service.instance.id"), "4f2a91c0be31-mcqa-41237");
  EXPECT_EQ(str(r, "service.version"), GYM_VERSION);
  EXPECT_EQ(str(r, "nemo.gym.service_group"), "nemo-gym");
  EXPECT_EQ(str(r, "nemo.gym.server.name"), "mcqa");
  EXPECT_EQ(str(r, "nemo.gym.server.type"), "resources_servers");
  EXPECT_EQ(str(r, "nemo.gym.version"), "0.7.0");
  EXPECT_EQ(str(r, "nemo.run.id"), "4f2a91c0be31");
  EXPECT_EQ(num(r, "nv.dl.rank"), 0);
  EXPECT_EQ(num(r, "nv.dl.world_size"), 1);
  EXPECT_EQ(str(r, "host.name"), "node-7");
  EXPECT_EQ(num(r, "process.pid"), 41237);
  EXPECT_EQ(str(r, "nemo.user.id"), "alice");
  EXPECT_EQ(str(r, "deployment.environment"), "staging");
  EXPECT_EQ(str(r, "telemetry.sdk.name"), "gym-cpp");
  EXPECT_EQ(str(r, "telemetry.sdk.language"), "cpp");
  EXPECT_EQ(str(r, "telemetry.sdk.version"), GYM_VERSION);
  EXPECT_EQ(r.attributes.size(), 17u);
}

TEST(Resource, OptionalAttributesOnlyWhenSet) {
  FakeEnv env;
  env.set("DEPLOYMENT_ENV", "prod");
  env.set("ENVIRONMENT", "ignored");
  TelemetrySettings s;
  auto r = build_resource(s, "run", {"orchestrator", "orchestrator"}, env.get(), {"h", 1});
  EXPECT_EQ(str(r, "deployment.environment"), "prod");
  EXPECT_EQ(str(r, "nemo.user.id"), "<absent>");
  EXPECT_EQ(str(r, "service.name"), "nemo-gym/orchestrator");
  FakeEnv none;
  auto bare = build_resource(s, "run", {"orchestrator", "orchestrator"}, none.get(), {"h", 1});
  EXPECT_EQ(str(bare, "deployment.environment"), "<absent>");
}

TEST(Resource, ServiceNameWithoutSuffixAndFromOtelServiceName) {
  FakeEnv env;
  env.set("OTEL_SERVICE_NAME", "my-gym");
  env.set("NEMO_GYM_OTEL_SERVICE_NAME_PER_SERVER", "false");
  auto s = resolve_settings(boost::json::object{}, env.get());
  auto r = build_resource(s, "run", {"policy_model", "responses_api_models"}, env.get(), {"h", 2});
  EXPECT_EQ(str(r, "service.name"), "my-gym");
  EXPECT_EQ(str(r, "nemo.gym.service_group"), "my-gym");
}

TEST(Resource, OtelResourceAttributesHaveTheLowestPrecedence) {
  FakeEnv env;
  env.set("OTEL_RESOURCE_ATTRIBUTES",
          "team=rl%20infra, service.name=from-env,host.name=spoofed,k8s.pod.name=p-1");
  TelemetrySettings s;
  auto r = build_resource(s, "run", {"mcqa", "resources_servers"}, env.get(), {"real", 3});
  EXPECT_EQ(str(r, "team"), "rl infra");
  EXPECT_EQ(str(r, "k8s.pod.name"), "p-1");
  EXPECT_EQ(str(r, "service.name"), "nemo-gym/mcqa");
  EXPECT_EQ(str(r, "host.name"), "real");

  FakeEnv bad;
  bad.set("OTEL_RESOURCE_ATTRIBUTES", "team=rl,broken");
  auto b = build_resource(s, "run", {"mcqa", "resources_servers"}, bad.get(), {"real", 3});
  EXPECT_EQ(str(b, "team"), "<absent>");  // a malformed value is ignored as a whole
}

TEST(Resource, CurrentHost) {
  HostFacts h = current_host();
  EXPECT_EQ(h.pid, static_cast<long>(::getpid()));
  EXPECT_FALSE(h.host_name.empty());
}

}  // namespace
}  // namespace gym::telemetry
