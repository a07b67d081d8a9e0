#include <boost/json.hpp>

#include "core/config.h"
#include "core/yaml_json.h"
#include "core_test_support.h"
#include "temp_dir.h"

#include <filesystem>
#include <fstream>

namespace gym::core {
namespace {

namespace json = boost::json;
using testing::config_error_of;

json::object yaml(const std::string& text) { return parse_yaml(text, "test.yaml").as_object(); }

const ImplCatalog kCatalog = {
    {"responses_api_models", {"openai_model", "vllm_model", "replay_model"}},
    {"resources_servers", {"example_single_tool_call", "math_with_judge"}},
    {"responses_api_agents", {"simple_agent"}},
};

constexpr const char* kValid = R"(
policy_model: {responses_api_models: {openai_model: {model: gpt, port: 9000}}}
weather: {resources_servers: {example_single_tool_call: {domain: agent}}}
weather_agent:
  responses_api_agents:
    simple_agent:
      resources_server: {type: resources_servers, name: weather}
      model_server: {type: responses_api_models, name: policy_model}
      datasets: [{name: d, type: example, jsonl_fpath: x.jsonl}]
head_server: {responses_api_models: {openai_model: {}}}
policy_base_url: http://x
other_mapping: {a: 1}
)";

TEST(ServerInstances, FindsWellFormedBlocksInOrder) {
  auto instances = find_server_instances(yaml(kValid));
  ASSERT_EQ(instances.size(), 3u);  // head_server is reserved, other_mapping is no server
  EXPECT_EQ(instances[0].name, "policy_model");
  EXPECT_EQ(instances[0].server_type, "responses_api_models");
  EXPECT_EQ(instances[0].impl, "openai_model");
  EXPECT_EQ(instances[0].config.at("port"), 9000);
  EXPECT_EQ(instances[2].name, "weather_agent");
  EXPECT_NO_THROW(validate_server_instances(yaml(kValid), kCatalog, {}));
}

TEST(ServerInstances, AlmostServersAreErrorsNamingEachKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"two_types: {resources_servers: {x: {}}, responses_api_agents: {y: {}}}", "2 server types"},
      {"no_impl: {resources_servers: {}}", "got none"},
      {"null_impl: {resources_servers: }", "got null"},
      {"two_impls: {resources_servers: {a: {}, b: {}}}", "got 2 (a, b)"},
      {"scalar_impl: {resources_servers: {a: 5}}", "'resources_servers.a' must be a mapping"},
      {"extra_keys: {resources_servers: {a: {}}, domain: math}", "keys beside"},
  };
  for (const auto& [text, fragment] : cases) {
    std::string msg = config_error_of([&] { find_server_instances(yaml(text)); });
    EXPECT_CONTAINS(msg, fragment);
    EXPECT_CONTAINS(msg, "'" + text.substr(0, text.find(':')) + "' looks like a server instance");
    EXPECT_CONTAINS(msg, "error_on_almost_servers: false");
  }
}

TEST(ServerInstances, AllAlmostServersInOneErrorWithTheirFiles) {
  json::object cfg = yaml("a: {resources_servers: {}}\nb: {resources_servers: {x: 1}}\n");
  ConfigOrigins origins;
  origins.record(cfg, "servers.yaml");
  std::string msg = config_error_of([&] { find_server_instances(cfg, &origins); });
  EXPECT_CONTAINS(msg, "2 top-level blocks");
  EXPECT_CONTAINS(msg, "'a' looks like");
  EXPECT_CONTAINS(msg, "'b' looks like");
  EXPECT_CONTAINS(msg, "(in servers.yaml)");
}

TEST(ServerInstances, AlmostServersCanBeIgnored) {
  json::object cfg = yaml(
      "error_on_almost_servers: false\nbad: {resources_servers: {}}\n"
      "good: {resources_servers: {math_with_judge: {domain: math}}}\n");
  auto instances = find_server_instances(cfg);
  ASSERT_EQ(instances.size(), 1u);
  EXPECT_EQ(instances[0].name, "good");
}

TEST(ValidateServers, UnknownImplementationListsBuiltIns) {
  std::string msg = config_error_of([] {
    validate_server_instances(yaml("m: {responses_api_models: {openai_modle: {}}}"), kCatalog, {});
  });
  EXPECT_CONTAINS(msg, "'openai_modle' is not a built-in responses_api_models implementation");
  EXPECT_CONTAINS(msg, "did you mean 'openai_model'?");
  EXPECT_CONTAINS(msg, "'openai_model', 'vllm_model', 'replay_model'");
}

// An implementation that is not built in runs as an external server when its folder
// <server_type>/<impl>/ holds the `entrypoint`; otherwise the error says what was looked for.
TEST(ValidateServers, ExternalServerNeedsItsFolderWithTheEntrypoint) {
  gym::test::TempDir dir;
  const std::filesystem::path root(dir.path());
  std::filesystem::create_directories(root / "resources_servers" / "my_env");
  const std::string cfg = "r: {resources_servers: {my_env: {entrypoint: app.py, domain: math}}}";
  const std::vector<std::string> roots{dir.path()};
  std::string msg = config_error_of([&] { validate_server_instances(yaml(cfg), kCatalog, roots); });
  EXPECT_CONTAINS(msg, "'my_env' is not a built-in resources_servers implementation");
  EXPECT_CONTAINS(msg, "no folder resources_servers/my_env/ holding its entrypoint 'app.py'");
  EXPECT_CONTAINS(msg, (root / "resources_servers" / "my_env").string());
  EXPECT_CONTAINS(msg, "--search-dir");

  std::ofstream(root / "resources_servers" / "my_env" / "app.py") << "print('hi')\n";
  EXPECT_NO_THROW(validate_server_instances(yaml(cfg), kCatalog, roots));
  auto instance = find_server_instances(yaml(cfg)).at(0);
  auto folder = find_server_folder(instance, roots);
  ASSERT_TRUE(folder.has_value());
  EXPECT_EQ(*folder, root / "resources_servers" / "my_env");

  // Without an entrypoint the error says how to run one's own server; an absolute one is refused.
  msg = config_error_of([&] {
    validate_server_instances(yaml("r: {resources_servers: {my_env: {domain: math}}}"), kCatalog,
                              roots);
  });
  EXPECT_CONTAINS(msg, "give it an `entrypoint`");
  msg = config_error_of([&] {
    validate_server_instances(
        yaml("r: {resources_servers: {my_env: {entrypoint: /tmp/app.py, domain: math}}}"), kCatalog,
        roots);
  });
  EXPECT_CONTAINS(msg, "must be a file name relative to the server's folder");
}

// gym-cpp's own resources servers live in environments/ of the install root: upstream's
// resources_servers/<env>/ paths find them there, and only there.
TEST(SearchCandidates, InstallRootMapsResourcesServersToEnvironments) {
  const std::vector<std::string> roots{"/somewhere", GYM_SOURCE_ROOT};
  auto candidates = search_candidates("resources_servers/mcqa/data/example.jsonl", roots);
  ASSERT_EQ(candidates.size(), 3u);
  EXPECT_EQ(candidates[0], "/somewhere/resources_servers/mcqa/data/example.jsonl");
  EXPECT_EQ(candidates[1],
            std::filesystem::path(GYM_SOURCE_ROOT) / "resources_servers/mcqa/data/example.jsonl");
  EXPECT_EQ(candidates[2],
            std::filesystem::path(GYM_SOURCE_ROOT) / "environments/mcqa/data/example.jsonl");
  EXPECT_EQ(search_candidates("data/x.jsonl", roots).size(), 2u);
  EXPECT_EQ(search_candidates("/abs/x.jsonl", roots).size(), 1u);
}

TEST(ValidateServers, ResourcesServersNeedAKnownDomain) {
  std::string msg = config_error_of([] {
    validate_server_instances(yaml("r: {resources_servers: {math_with_judge: {}}}"), kCatalog, {});
  });
  EXPECT_CONTAINS(msg, "instance 'r' needs `domain`");
  EXPECT_CONTAINS(msg, "instruction_following");
  EXPECT_CONTAINS(msg, "++r.resources_servers.math_with_judge.domain=<domain>");
  msg = config_error_of([] {
    validate_server_instances(yaml("r: {resources_servers: {math_with_judge: {domain: maths}}}"),
                              kCatalog, {});
  });
  EXPECT_CONTAINS(msg, "did you mean 'math'?");
}

TEST(ValidateServers, ReferenceTypoSuggestsTheClosestInstance) {
  json::object cfg = yaml(kValid);
  cfg["weather_agent"]
      .as_object()["responses_api_agents"]
      .as_object()["simple_agent"]
      .as_object()["model_server"]
      .as_object()["name"] = "policy_modl";
  ConfigOrigins origins;
  origins.record(cfg, "agent.yaml");
  std::string msg =
      config_error_of([&] { validate_server_instances(cfg, kCatalog, {}, &origins); });
  EXPECT_EQ(msg,
            "config error in agent.yaml: 'weather_agent.responses_api_agents.simple_agent."
            "model_server' refers to responses_api_models 'policy_modl', which is not defined; "
            "did you mean 'policy_model'?");
}

// issue 13.12: a missing model says how to add one from the command line.
TEST(ValidateServers, MissingModelServerSuggestsModelType) {
  json::object cfg = yaml(kValid);
  cfg.erase("policy_model");
  std::string msg = config_error_of([&] { validate_server_instances(cfg, kCatalog, {}); });
  EXPECT_CONTAINS(msg, "refers to responses_api_models 'policy_model', which is not defined");
  EXPECT_CONTAINS(msg, "add a model server with --model-type NAME");
  EXPECT_CONTAINS(msg, "`gym list`");
}

TEST(ValidateServers, ReferenceWithoutCloseMatchListsInstances) {
  json::object cfg = yaml(kValid);
  cfg["extra"] = json::parse(R"({"refs": [{"type": "resources_servers", "name": "zzzzzzzz"}]})");
  std::string msg = config_error_of([&] { validate_server_instances(cfg, kCatalog, {}); });
  EXPECT_CONTAINS(msg, "'extra.refs[0]' refers to resources_servers 'zzzzzzzz'");
  EXPECT_CONTAINS(msg, "available resources_servers: 'weather'");
}

TEST(ValidateServers, CollectsEveryProblemAndRejectsR8Keys) {
  json::object cfg = yaml(R"(
prompt_config: {a: 1}
m: {responses_api_models: {nope_model: {}}}
r: {resources_servers: {math_with_judge: {skills: [x]}}}
)");
  std::string msg = config_error_of([&] { validate_server_instances(cfg, kCatalog, {}); });
  EXPECT_CONTAINS(msg, "config error: 4 problems");
  EXPECT_CONTAINS(msg, "'prompt_config' is not supported");
  EXPECT_CONTAINS(msg, "'nope_model' is not a built-in");
  EXPECT_CONTAINS(msg, "needs `domain`");
  EXPECT_CONTAINS(msg, "'r.resources_servers.math_with_judge.skills' is not supported");
}

// NeMo Gym's training-token capture is not implemented: enabled, it is a startup error naming
// the key and the way gym-cpp delivers token ids; disabled or absent, it is accepted.
TEST(ValidateServers, EnabledTokenIdCaptureIsAnErrorNamingTheKey) {
  for (const char* off :
       {"token_id_capture: {enabled: false, dir: /tmp/x}\n", "token_id_capture: {dir: /tmp/x}\n",
        "token_id_capture: null\n", "token_id_capture: false\n", ""})
    EXPECT_NO_THROW(validate_server_instances(yaml(kValid + std::string(off)), kCatalog, {}))
        << off;

  auto msg = config_error_of([&] {
    validate_server_instances(yaml(kValid + std::string("token_id_capture: {enabled: true}\n")),
                              kCatalog, {});
  });
  EXPECT_CONTAINS(msg, "'token_id_capture.enabled' is set");
  EXPECT_CONTAINS(msg, "gym-cpp does not implement NeMo Gym's training-token capture");
  EXPECT_CONTAINS(msg, "return_token_id_information: true");
  EXPECT_CONTAINS(msg, "vllm_model/vllm_model_for_training");

  json::object cfg = yaml(kValid);
  cfg["weather_agent"]
      .as_object()["responses_api_agents"]
      .as_object()["simple_agent"]
      .as_object()["token_id_capture"] = true;
  msg = config_error_of([&] { validate_server_instances(cfg, kCatalog, {}); });
  EXPECT_CONTAINS(msg,
                  "'weather_agent.responses_api_agents.simple_agent.token_id_capture' is true: "
                  "gym-cpp does not implement");
  cfg["weather_agent"]
      .as_object()["responses_api_agents"]
      .as_object()["simple_agent"]
      .as_object()["token_id_capture"] = false;
  EXPECT_NO_THROW(validate_server_instances(cfg, kCatalog, {}));
}

TEST(DidYouMean, ClosestWithinThreshold) {
  std::vector<std::string> names = {"policy_model", "judge_model", "math"};
  EXPECT_EQ(did_you_mean("policy_modle", names), "policy_model");
  EXPECT_EQ(did_you_mean("mat", names), "math");
  EXPECT_EQ(did_you_mean("xyz", names), std::nullopt);
  // max(2, size/3): 15 letters allow 5 edits, 18 letters 6
  EXPECT_EQ(did_you_mean("judge_model_xyz", names), "judge_model");
  EXPECT_EQ(did_you_mean("judge_model_uvwxyz", names), std::nullopt);
  EXPECT_EQ(did_you_mean("anything", {}), std::nullopt);
}

TEST(ReservedKeys, FollowTheSpec) {
  for (auto key : {"config_paths", "head_server", "telemetry", "_inherit_from", "hf_token",
                   "skip_verification_reward", "model_endpoint_readiness_timeout_seconds"}) {
    EXPECT_TRUE(is_reserved_key(key)) << key;
  }
  for (auto key : {"policy_base_url", "policy_model", "limit", "my_server"}) {
    EXPECT_FALSE(is_reserved_key(key)) << key;
  }
}

}  // namespace
}  // namespace gym::core
