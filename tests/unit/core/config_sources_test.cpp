// The config sources beyond files and overrides: the env file (--env-file, --no-env-file), the
// initial config (--initial-config), bundled presets as the last resort of config_paths, and
// vllm_model's policy_api_key default.
#include <boost/json.hpp>

#include "core/config.h"
#include "core_test_support.h"
#include "temp_dir.h"

namespace gym::core {
namespace {

namespace json = boost::json;
using gym::test::TempDir;
using testing::config_error_of;
using testing::sources_in;
using testing::strings;

TEST(ConfigSources, FilesThenEnvYamlThenInitialConfigThenOverrides) {
  TempDir dir;
  dir.write("c.yaml", "a: file\nb: file\nc: file\nd: file\nnested: {x: file, y: file}\n");
  dir.write("env.yaml", "b: env\nc: env\nd: env\nnested: {y: env}\n");
  const auto initial = dir.write("initial.yaml", "c: initial\nd: initial\nnested: {z: initial}\n");
  ConfigSources s = sources_in({dir.path()});
  s.config_paths = {"c.yaml"};
  s.initial_config = initial;
  s.overrides = {"d=cli"};
  ConfigOrigins origins;
  const json::object cfg = load_config(s, &origins);
  EXPECT_EQ(cfg.at("a"), "file");
  EXPECT_EQ(cfg.at("b"), "env");
  EXPECT_EQ(cfg.at("c"), "initial");
  EXPECT_EQ(cfg.at("d"), "cli");
  EXPECT_EQ(cfg.at("nested"), json::parse(R"({"x":"file","y":"env","z":"initial"})"));
  EXPECT_EQ(origins.find("c"), initial);
  EXPECT_EQ(origins.find("b"), dir.file("env.yaml"));
  EXPECT_EQ(origins.find("d"), "the command line (d=cli)");
}

TEST(ConfigSources, InitialConfigPathsComeAfterTheCommandLinesAndBeforeEnvYamls) {
  TempDir dir;
  dir.write("env.yaml", "config_paths: [e.yaml]\n");
  dir.write("e.yaml", "from_env_list: 1\n");
  dir.write("i.yaml", "from_initial_list: 1\n");
  dir.write("c.yaml", "from_cli: 1\n");
  const auto initial = dir.write("initial.yaml", "config_paths: [i.yaml]\nkey: v\n");
  ConfigSources s = sources_in({dir.path()});
  s.initial_config = initial;
  json::object cfg = load_config(s);
  EXPECT_EQ(cfg.at("from_initial_list"), 1);
  EXPECT_FALSE(cfg.contains("from_env_list"));
  EXPECT_EQ(cfg.at("config_paths"), strings({"i.yaml"}));
  EXPECT_EQ(cfg.at("key"), "v");

  s.config_paths = {"c.yaml"};
  cfg = load_config(s);
  EXPECT_EQ(cfg.at("from_cli"), 1);
  EXPECT_FALSE(cfg.contains("from_initial_list"));
  EXPECT_FALSE(cfg.contains("from_env_list"));

  // An empty list in the initial config still replaces env.yaml's.
  s.config_paths.clear();
  s.initial_config = dir.write("empty_list.yaml", "config_paths: []\n");
  cfg = load_config(s);
  EXPECT_FALSE(cfg.contains("from_env_list"));
  // Without config_paths of its own, env.yaml's list is used.
  s.initial_config = dir.write("no_list.yaml", "key: w\n");
  cfg = load_config(s);
  EXPECT_EQ(cfg.at("from_env_list"), 1);
  EXPECT_EQ(cfg.at("key"), "w");
}

TEST(ConfigSources, InitialConfigMustBeAnExistingMapping) {
  TempDir dir;
  ConfigSources s = sources_in({dir.path()});
  s.initial_config = dir.file("missing.yaml");
  EXPECT_CONTAINS(config_error_of([&] { load_config(s); }),
                  "config file '" + dir.file("missing.yaml") + "' does not exist");
  s.initial_config = dir.write("list.yaml", "[1, 2]\n");
  EXPECT_CONTAINS(config_error_of([&] { load_config(s); }), "the top level must be a mapping");
}

TEST(ConfigSources, EnvFileReplacesTheEnvYamlOfTheSearchRoots) {
  TempDir dir;
  TempDir elsewhere;
  dir.write("env.yaml", "policy_model_name: from_env_yaml\nonly_env_yaml: 1\n");
  const auto env_file = elsewhere.write("cluster.yaml", "policy_model_name: from_env_file\n");
  ConfigSources s = sources_in({dir.path()});
  s.env_file = env_file;
  ConfigOrigins origins;
  json::object cfg = load_config(s, &origins);
  EXPECT_EQ(cfg.at("policy_model_name"), "from_env_file");
  EXPECT_FALSE(cfg.contains("only_env_yaml"));
  EXPECT_EQ(origins.find("policy_model_name"), env_file);

  s.env_file = elsewhere.file("nope.yaml");
  const auto msg = config_error_of([&] { load_config(s); });
  EXPECT_CONTAINS(msg, "the env file '" + elsewhere.file("nope.yaml") +
                           "' (--env-file) does not "
                           "exist");
  s.env_file = elsewhere.path();
  EXPECT_CONTAINS(config_error_of([&] { load_config(s); }), "is not a regular file");

  // --no-env-file: none at all.
  s.env_file.clear();
  s.load_env_yaml = false;
  cfg = load_config(s);
  EXPECT_FALSE(cfg.contains("policy_model_name"));
}

TEST(ConfigSources, BundledPresetsAreTheLastResortOfConfigPaths) {
  TempDir dir;
  const std::string preset = "responses_api_models/m/configs/fast.yaml";
  ConfigSources s = sources_in({dir.path()});
  int asked = 0;
  s.bundled_config = [&](const std::string& path) -> std::optional<std::string> {
    ++asked;
    if (path == preset || path == "./" + preset) return std::string("from: bundled\nb: 1\n");
    return std::nullopt;
  };
  dir.write("mine.yaml", "config_paths: [./" + preset + "]\nmine: 1\n");
  s.config_paths = {"mine.yaml"};
  ConfigOrigins origins;
  json::object cfg = load_config(s, &origins);
  EXPECT_EQ(cfg.at("from"), "bundled");
  EXPECT_EQ(cfg.at("mine"), 1);
  EXPECT_EQ(cfg.at("config_paths"),
            strings({"./responses_api_models/m/configs/fast.yaml", "mine.yaml"}));  // as written
  EXPECT_EQ(origins.find("b"), "the built-in preset " + preset);

  // A file in a search root wins; the preset is not even asked for.
  dir.write(preset, "from: disk\n");
  asked = 0;
  s.config_paths = {preset};
  EXPECT_EQ(load_config(s).at("from"), "disk");
  EXPECT_EQ(asked, 0);

  // A path that is neither keeps the error listing where it looked.
  s.config_paths = {"responses_api_models/m/configs/slow.yaml"};
  const auto msg = config_error_of([&] { load_config(s); });
  EXPECT_CONTAINS(msg, "config file 'responses_api_models/m/configs/slow.yaml' was not found");
  EXPECT_CONTAINS(msg, dir.file("responses_api_models/m/configs/slow.yaml"));
}

constexpr const char* kVllmPreset =
    "policy_model:\n  responses_api_models:\n    vllm_model:\n      base_url: "
    "${policy_base_url}\n      api_key: ${policy_api_key}\n      model: ${policy_model_name}\n";

TEST(ConfigSources, VllmModelsPolicyApiKeyIsEmptyUnlessSet) {
  TempDir dir;
  dir.write("vllm.yaml", kVllmPreset);
  ConfigSources s = sources_in({dir.path()});
  s.config_paths = {"vllm.yaml"};
  s.overrides = {"++policy_base_url=http://127.0.0.1:8000/v1", "++policy_model_name=m"};
  ConfigOrigins origins;
  json::object cfg = load_config(s, &origins);
  EXPECT_EQ(cfg.at("policy_api_key"), "EMPTY");
  EXPECT_EQ(cfg.at("policy_model").at("responses_api_models").at("vllm_model").at("api_key"),
            "EMPTY");
  EXPECT_CONTAINS(origins.find("policy_api_key"), "default for vllm_model");

  s.overrides.push_back("++policy_api_key=sk-1");
  cfg = load_config(s);
  EXPECT_EQ(cfg.at("policy_model").at("responses_api_models").at("vllm_model").at("api_key"),
            "sk-1");
}

TEST(ConfigSources, OtherModelServersStillNeedPolicyApiKey) {
  TempDir dir;
  dir.write("vllm.yaml", kVllmPreset);
  dir.write("judge.yaml",
            "judge_model:\n  responses_api_models:\n    openai_model:\n      openai_api_key: "
            "${policy_api_key}\n");
  ConfigSources s = sources_in({dir.path()});
  s.config_paths = {"vllm.yaml", "judge.yaml"};
  s.overrides = {"++policy_base_url=http://127.0.0.1:8000/v1", "++policy_model_name=m"};
  EXPECT_CONTAINS(config_error_of([&] { load_config(s); }), "'policy_api_key' is not set");
  // Without a vllm_model nothing is added.
  s.config_paths = {"judge.yaml"};
  s.overrides = {"++policy_api_key=k"};
  EXPECT_EQ(load_config(s).at("policy_api_key"), "k");
  s.overrides.clear();
  dir.write("plain.yaml", "a: 1\n");
  s.config_paths = {"plain.yaml"};
  EXPECT_FALSE(load_config(s).contains("policy_api_key"));
}

}  // namespace
}  // namespace gym::core
