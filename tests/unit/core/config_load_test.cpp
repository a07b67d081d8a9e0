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

TEST(LoadConfig, FileOverridesItsIncludesAndLaterSiblingsOverrideEarlier) {
  TempDir dir;
  dir.write("a.yaml", "config_paths: [b.yaml, c.yaml]\nwho: a\nonly_a: 1\n");
  dir.write("b.yaml", "config_paths: [d.yaml]\nwho: b\nshared: b\nfrom_b: {x: 1, y: 1}\n");
  dir.write("c.yaml", "who: c\nshared: c\nfrom_b: {y: 2}\n");
  dir.write("d.yaml", "who: d\nshared: d\nonly_d: true\n");
  ConfigSources s = sources_in({dir.path()});
  s.config_paths = {"a.yaml"};
  json::object cfg = load_config(s);
  EXPECT_EQ(cfg.at("who"), "a");     // a overrides what it includes
  EXPECT_EQ(cfg.at("shared"), "c");  // the later sibling c beats b and b's include d
  EXPECT_EQ(cfg.at("only_d"), true);
  EXPECT_EQ(cfg.at("from_b"), json::parse(R"({"x": 1, "y": 2})"));  // mappings merge
  EXPECT_EQ(cfg.at("config_paths"), strings({"d.yaml", "b.yaml", "c.yaml", "a.yaml"}));
}

TEST(LoadConfig, CommandLineFilesInOrder) {
  TempDir dir;
  dir.write("one.yaml", "v: 1\nlist: [1, 2, 3]\n");
  dir.write("two.yaml", "v: 2\nlist: [9]\n");
  ConfigSources s = sources_in({dir.path()});
  s.config_paths = {"one.yaml", "two.yaml"};
  json::object cfg = load_config(s);
  EXPECT_EQ(cfg.at("v"), 2);
  EXPECT_EQ(cfg.at("list"), json::array{9});  // lists are replaced, not merged
}

TEST(LoadConfig, DiamondIncludeIsLoadedOnce) {
  TempDir dir;
  dir.write("a.yaml", "config_paths: [b.yaml, c.yaml]\n");
  dir.write("b.yaml", "config_paths: [d.yaml]\nv: from_b\n");
  dir.write("c.yaml", "config_paths: [d.yaml]\nc: 1\n");
  dir.write("d.yaml", "v: from_d\n");
  ConfigSources s = sources_in({dir.path()});
  s.config_paths = {"a.yaml"};
  json::object cfg = load_config(s);
  // Loading d again after b would have put from_d back.
  EXPECT_EQ(cfg.at("v"), "from_b");
  EXPECT_EQ(cfg.at("config_paths"), strings({"d.yaml", "b.yaml", "c.yaml", "a.yaml"}));
}

TEST(LoadConfig, RelativePathsUseTheFirstSearchRootThatHasThem) {
  TempDir first;
  TempDir second;
  first.write("configs/x.yaml", "from: first\n");
  second.write("configs/x.yaml", "from: second\n");
  second.write("configs/y.yaml", "y: 1\n");
  ConfigSources s = sources_in({first.path(), second.path()});
  s.config_paths = {"configs/x.yaml", "configs/y.yaml"};
  json::object cfg = load_config(s);
  EXPECT_EQ(cfg.at("from"), "first");
  EXPECT_EQ(cfg.at("y"), 1);
}

TEST(LoadConfig, MissingFileListsWhereItLooked) {
  TempDir first;
  TempDir second;
  first.write("a.yaml", "config_paths: [missing/z.yaml]\n");
  ConfigSources s = sources_in({first.path(), second.path()});
  s.config_paths = {"a.yaml"};
  std::string msg = config_error_of([&] { load_config(s); });
  EXPECT_CONTAINS(msg, "'missing/z.yaml' was not found");
  EXPECT_CONTAINS(msg, first.file("a.yaml"));  // who included it
  EXPECT_CONTAINS(msg, first.file("missing/z.yaml"));
  EXPECT_CONTAINS(msg, second.file("missing/z.yaml"));
  EXPECT_CONTAINS(msg, "--search-dir");
}

TEST(LoadConfig, EnvYamlFromTheFirstRootOverridesFiles) {
  TempDir first;
  TempDir second;
  first.write("env.yaml", "policy_api_key: one\n");
  second.write("env.yaml", "policy_api_key: two\nonly_second: 1\n");
  second.write("c.yaml", "policy_api_key: from_file\nkeep: 1\n");
  ConfigSources s = sources_in({first.path(), second.path()});
  s.config_paths = {"c.yaml"};
  json::object cfg = load_config(s);
  EXPECT_EQ(cfg.at("policy_api_key"), "one");
  EXPECT_FALSE(cfg.contains("only_second"));
  EXPECT_EQ(cfg.at("keep"), 1);

  s.load_env_yaml = false;
  EXPECT_EQ(load_config(s).at("policy_api_key"), "from_file");
}

TEST(LoadConfig, EnvYamlConfigPathsUnlessTheCommandLineGivesSome) {
  TempDir dir;
  dir.write("env.yaml", "config_paths: [e.yaml]\nsecret: s\n");
  dir.write("e.yaml", "from_env_list: 1\n");
  dir.write("c.yaml", "from_cli: 1\n");
  ConfigSources s = sources_in({dir.path()});
  json::object cfg = load_config(s);
  EXPECT_EQ(cfg.at("from_env_list"), 1);
  EXPECT_EQ(cfg.at("secret"), "s");

  s.config_paths = {"c.yaml"};  // as in NeMo Gym, the command line's list replaces env.yaml's
  cfg = load_config(s);
  EXPECT_EQ(cfg.at("from_cli"), 1);
  EXPECT_FALSE(cfg.contains("from_env_list"));
}

TEST(LoadConfig, ConfigPathsOverrideLoadsFiles) {
  TempDir dir;
  dir.write("a.yaml", "a: 1\n");
  dir.write("b.yaml", "b: 2\n");
  ConfigSources s = sources_in({dir.path()});
  s.overrides = {"+config_paths=[a.yaml,b.yaml]"};
  json::object cfg = load_config(s);
  EXPECT_EQ(cfg.at("a"), 1);
  EXPECT_EQ(cfg.at("b"), 2);
}

TEST(LoadConfig, OverridesWinOverEnvYaml) {
  TempDir dir;
  dir.write("env.yaml", "policy_model_name: from_env\n");
  ConfigSources s = sources_in({dir.path()});
  s.overrides = {"policy_model_name=from_cli", "++extra.deep=[1, 2]"};
  json::object cfg = load_config(s);
  EXPECT_EQ(cfg.at("policy_model_name"), "from_cli");
  EXPECT_EQ(cfg.at("extra").at("deep"), json::array({1, 2}));
}

TEST(LoadConfig, LaterQuestionMarksDoNotEraseValues) {
  TempDir dir;
  dir.write("a.yaml", "model: {name: real}\n");
  dir.write("b.yaml", "model:\n  name: ???\n");
  ConfigSources s = sources_in({dir.path()});
  s.config_paths = {"a.yaml", "b.yaml"};
  EXPECT_EQ(load_config(s).at("model").at("name"), "real");
}

TEST(LoadConfig, TopLevelMustBeAMapping) {
  TempDir dir;
  dir.write("list.yaml", "- a\n- b\n");
  ConfigSources s = sources_in({dir.path()});
  s.config_paths = {"list.yaml"};
  std::string msg = config_error_of([&] { load_config(s); });
  EXPECT_CONTAINS(msg, dir.file("list.yaml"));
  EXPECT_CONTAINS(msg, "must be a mapping");
}

TEST(LoadConfig, MissingValueNamesTheFileAndTheOverride) {
  TempDir dir;
  dir.write("a.yaml",
            "policy_model:\n  responses_api_models:\n    replay_model:\n"
            "      rollouts_jsonl_fpaths: ???\n");
  ConfigSources s = sources_in({dir.path()});
  s.config_paths = {"a.yaml"};
  std::string msg = config_error_of([&] { load_config(s); });
  EXPECT_EQ(msg, "config error in " + dir.file("a.yaml") +
                     ": key 'policy_model.responses_api_models.replay_model."
                     "rollouts_jsonl_fpaths' is missing (\?\?\?); set it with "
                     "++policy_model.responses_api_models.replay_model.rollouts_jsonl_fpaths="
                     "<value>");
}

TEST(LoadConfig, RecordsWhereKeysCameFrom) {
  TempDir dir;
  dir.write("a.yaml", "x: {y: 1, z: 1}\n");
  dir.write("env.yaml", "x: {z: 2}\n");
  ConfigSources s = sources_in({dir.path()});
  s.config_paths = {"a.yaml"};
  s.overrides = {"++w=3"};
  ConfigOrigins origins;
  load_config(s, &origins);
  EXPECT_EQ(origins.find("x.y"), dir.file("a.yaml"));
  EXPECT_EQ(origins.find("x.z"), dir.file("env.yaml"));
  EXPECT_EQ(origins.find("x.y.deeper[0]"), dir.file("a.yaml"));
  EXPECT_CONTAINS(origins.find("w"), "++w=3");
  EXPECT_EQ(origins.find("unknown"), "");
}

TEST(LoadConfig, FillsDefaults) {
  ConfigSources s = sources_in({});
  s.load_env_yaml = false;
  json::object cfg = load_config(s);
  EXPECT_EQ(cfg.at("head_server"), json::parse(R"({"host": "127.0.0.1", "port": 11000})"));
  EXPECT_EQ(cfg.at("port_range_low"), 10001);
  EXPECT_EQ(cfg.at("port_range_high"), 20000);
  EXPECT_EQ(cfg.at("dry_run"), false);
  EXPECT_EQ(cfg.at("model_endpoint_readiness_timeout_seconds"), 600);

  s.overrides = {"++default_host=0.0.0.0", "++head_server.port=12000", "++port_range_low=30000"};
  cfg = load_config(s);
  EXPECT_EQ(cfg.at("head_server"), json::parse(R"({"port": 12000, "host": "0.0.0.0"})"));
  EXPECT_EQ(cfg.at("port_range_low"), 30000);
}

TEST(LoadConfig, SkipVerificationIsCopiedIntoAgentsThatDoNotSetIt) {
  TempDir dir;
  dir.write("c.yaml", R"(
skip_verification: true
skip_verification_reward: 0.5
plain_agent: {responses_api_agents: {simple_agent: {max_steps: 3}}}
own_agent: {responses_api_agents: {simple_agent: {skip_verification: false}}}
model: {responses_api_models: {openai_model: {}}}
)");
  ConfigSources s = sources_in({dir.path()});
  s.config_paths = {"c.yaml"};
  json::object cfg = load_config(s);
  const auto& plain = cfg.at("plain_agent").at("responses_api_agents").at("simple_agent");
  EXPECT_EQ(plain.at("skip_verification"), true);
  EXPECT_EQ(plain.at("skip_verification_reward"), 0.5);
  const auto& own = cfg.at("own_agent").at("responses_api_agents").at("simple_agent");
  EXPECT_EQ(own.at("skip_verification"), false);
  EXPECT_EQ(own.at("skip_verification_reward"), 0.5);
  EXPECT_FALSE(cfg.at("model")
                   .at("responses_api_models")
                   .at("openai_model")
                   .as_object()
                   .contains("skip_verification"));
}

TEST(LoadConfig, DefaultSourcesUseEnvironmentRoots) {
  ::setenv("NEMO_GYM_EXTRA_ROOTS", "/extra/one:/extra/two", 1);
  ConfigSources s = default_sources();
  ::unsetenv("NEMO_GYM_EXTRA_ROOTS");
  ASSERT_GE(s.search_roots.size(), 3u);
  EXPECT_EQ(s.search_roots[0], "/extra/one");
  EXPECT_EQ(s.search_roots[1], "/extra/two");
  EXPECT_EQ(s.search_roots.back(), GYM_SOURCE_ROOT);
  ::setenv("GYM_CORE_TEST_VAR", "hello", 1);
  EXPECT_EQ(s.getenv("GYM_CORE_TEST_VAR"), "hello");
  EXPECT_FALSE(s.getenv("GYM_CORE_TEST_UNSET_VAR").has_value());
}

TEST(ResolveSearchPath, FirstRootWinsAndErrorsListEveryPlace) {
  TempDir first;
  TempDir second;
  second.write("data/train.jsonl", "{}\n");
  first.write("data/both.jsonl", "{}\n");
  second.write("data/both.jsonl", "{}\n");
  std::vector<std::string> roots = {first.path(), second.path()};
  EXPECT_EQ(resolve_search_path("data/train.jsonl", roots, "dataset"),
            second.file("data/train.jsonl"));
  EXPECT_EQ(resolve_search_path("data/both.jsonl", roots, "dataset"),
            first.file("data/both.jsonl"));
  EXPECT_EQ(resolve_search_path(second.file("data/train.jsonl"), {}, "dataset"),
            second.file("data/train.jsonl"));
  std::string msg = config_error_of(
      [&] { resolve_search_path("data/none.jsonl", roots, "dataset", "agent.datasets[0]"); });
  EXPECT_CONTAINS(msg,
                  "config error in agent.datasets[0]: dataset 'data/none.jsonl' was not found");
  EXPECT_CONTAINS(msg, first.file("data/none.jsonl"));
  EXPECT_CONTAINS(msg, second.file("data/none.jsonl"));
}

}  // namespace
}  // namespace gym::core
