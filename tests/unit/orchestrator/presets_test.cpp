// Named selectors and bundled presets: orchestrator/presets.h.
#include "orchestrator/presets.h"

#include <boost/json.hpp>

#include <map>
#include <set>
#include <tuple>

#include "core/yaml_json.h"
#include "orchestrator_test_support.h"

namespace gym::orchestrator {
namespace {

namespace fs = std::filesystem;
using testing::config_error_of;
using testing::read_text;
using testing::TempDir;

using PresetId = std::tuple<std::string, std::string, std::string>;  // type, name, flavor

// What the build must have embedded: environments/<name>/configs/<flavor>.yaml as resources
// servers and src/models/configs/<name>.yaml as models, with their file contents.
std::map<PresetId, std::string> presets_on_disk() {
  std::map<PresetId, std::string> out;
  const fs::path root = GYM_SOURCE_ROOT;
  for (const auto& env : fs::directory_iterator(root / "environments")) {
    if (!fs::is_directory(env.path() / "configs")) continue;
    for (const auto& file : fs::directory_iterator(env.path() / "configs"))
      if (file.path().extension() == ".yaml")
        out[{"resources_servers", env.path().filename().string(), file.path().stem().string()}] =
            read_text(file.path());
  }
  // A model file <name>_<more>.yaml beside <name>.yaml is the flavor <name>_<more> of <name>.
  std::set<std::string> stems;
  for (const auto& file : fs::directory_iterator(root / "src/models/configs"))
    if (file.path().extension() == ".yaml") stems.insert(file.path().stem().string());
  for (const auto& stem : stems) {
    std::string name = stem;
    for (const auto& other : stems)
      if (stem.starts_with(other + "_")) name = other;
    out[{"responses_api_models", name, stem}] =
        read_text(root / "src/models/configs" / (stem + ".yaml"));
  }
  return out;
}

// ---- bundled_presets ----

TEST(BundledPresets, EveryEnvironmentAndModelConfigIsEmbeddedVerbatim) {
  std::map<PresetId, std::string> bundled;
  for (const auto& p : bundled_presets()) {
    auto [it, inserted] = bundled.emplace(PresetId{p.server_type, p.name, p.flavor}, p.yaml);
    EXPECT_TRUE(inserted) << "duplicate preset " << p.server_type << " " << p.name << "/"
                          << p.flavor;
  }
  auto on_disk = presets_on_disk();
  ASSERT_FALSE(on_disk.empty());
  std::set<PresetId> bundled_ids, disk_ids;
  for (const auto& [id, _] : bundled) bundled_ids.insert(id);
  for (const auto& [id, _] : on_disk) disk_ids.insert(id);
  EXPECT_EQ(bundled_ids, disk_ids);
  for (const auto& [id, yaml] : on_disk) {
    auto it = bundled.find(id);
    if (it != bundled.end()) {
      EXPECT_EQ(it->second, yaml) << std::get<1>(id) << "/" << std::get<2>(id);
    }
  }
}

TEST(BundledPresets, IncludeTheBuiltInEnvironmentsAndTheReplayModel) {
  std::set<PresetId> ids;
  for (const auto& p : bundled_presets()) ids.insert({p.server_type, p.name, p.flavor});
  for (const char* env : {"mcqa", "example_single_tool_call", "example_multi_step", "string_match",
                          "xlam_fc", "example_session_state_mgmt", "gpqa_diamond",
                          "bunsenbench_chemistry_mcq", "example_tool_call_multireward"})
    EXPECT_TRUE(ids.count({"resources_servers", env, env})) << env;
  EXPECT_TRUE(ids.count({"responses_api_models", "replay_model", "replay_model"}));
  // NeMo Gym's training flavor of vllm_model.
  EXPECT_TRUE(ids.count({"responses_api_models", "vllm_model", "vllm_model_for_training"}));
}

TEST(BundledPresets, EveryPresetIsAConfigMapping) {
  for (const auto& p : bundled_presets()) {
    auto tree = core::parse_yaml(p.yaml, p.name);
    EXPECT_TRUE(tree.is_object()) << p.name;
  }
}

// ---- selector_config_path ----

TEST(SelectorConfigPath, BundledPresetIsWrittenToAPrivateFile) {
  auto path = selector_config_path("resources_servers", "mcqa", {});
  EXPECT_EQ(fs::path(path).filename(), "resources_servers-mcqa-mcqa.yaml");
  EXPECT_EQ(read_text(path),
            read_text(fs::path(GYM_SOURCE_ROOT) / "environments/mcqa/configs/mcqa.yaml"));
  EXPECT_EQ(selector_config_path("resources_servers", "mcqa", {}), path);  // written once

  auto model = selector_config_path("responses_api_models", "replay_model", {});
  EXPECT_EQ(fs::path(model).filename(), "responses_api_models-replay_model-replay_model.yaml");
  EXPECT_EQ(fs::path(model).parent_path(), fs::path(path).parent_path());
  EXPECT_EQ(read_text(model),
            read_text(fs::path(GYM_SOURCE_ROOT) / "src/models/configs/replay_model.yaml"));
}

TEST(SelectorConfigPath, ExplicitFlavorOfABundledPreset) {
  auto path = selector_config_path("resources_servers", "string_match/string_match", {});
  EXPECT_EQ(fs::path(path).filename(), "resources_servers-string_match-string_match.yaml");
}

TEST(SelectorConfigPath, SearchRootsWinOverBundledPresets) {
  TempDir first, second;
  auto in_second = second.write("resources_servers/mcqa/configs/mcqa.yaml", "mine: {}\n");
  EXPECT_EQ(selector_config_path("resources_servers", "mcqa", {first.path(), second.path()}),
            in_second);
  // The first root that has the file wins.
  auto in_first = first.write("resources_servers/mcqa/configs/mcqa.yaml", "first: {}\n");
  EXPECT_EQ(selector_config_path("resources_servers", "mcqa", {first.path(), second.path()}),
            in_first);
}

TEST(SelectorConfigPath, NameAndFlavorInTheSearchRoots) {
  TempDir root;
  auto flavored = root.write("resources_servers/my_env/configs/hard.yaml", "a: 1\n");
  auto plain = root.write("resources_servers/my_env/configs/my_env.yaml", "a: 2\n");
  auto model = root.write("responses_api_models/my_model/configs/fast.yaml", "b: 1\n");
  const std::vector<std::string> roots{root.path()};
  EXPECT_EQ(selector_config_path("resources_servers", "my_env/hard", roots), flavored);
  EXPECT_EQ(selector_config_path("resources_servers", "my_env", roots), plain);
  EXPECT_EQ(selector_config_path("responses_api_models", "my_model/fast", roots), model);
}

TEST(SelectorConfigPath, UnknownNameListsTheKnownPresetsOfThatType) {
  auto message =
      config_error_of([] { selector_config_path("resources_servers", "no_such_env", {}); });
  EXPECT_EQ(message.rfind("no config for resources_servers 'no_such_env': "
                          "resources_servers/no_such_env/configs/no_such_env.yaml is not in the "
                          "search roots and no preset is built in\nbuilt-in presets:",
                          0),
            0u)
      << message;
  for (const auto& p : bundled_presets()) {
    std::string listed = std::string(" ") + p.name;
    if (std::string(p.server_type) == "resources_servers") {
      EXPECT_CONTAINS(message, listed);
    } else {
      EXPECT_NOT_CONTAINS(message, listed);
    }
  }
  EXPECT_NOT_CONTAINS(message, "did you mean");
}

TEST(SelectorConfigPath, NearMissSuggestsTheClosestPreset) {
  EXPECT_CONTAINS(config_error_of([] { selector_config_path("resources_servers", "mqca", {}); }),
                  "; did you mean 'mcqa'?\nbuilt-in presets:");
  EXPECT_CONTAINS(
      config_error_of([] { selector_config_path("responses_api_models", "replay_modle", {}); }),
      "; did you mean 'replay_model'?\nbuilt-in presets: azure_openai_model openai_model "
      "replay_model vllm_model");
}

TEST(SelectorConfigPath, UnknownFlavorOfAKnownNameIsAnError) {
  auto message =
      config_error_of([] { selector_config_path("resources_servers", "mcqa/hard", {}); });
  EXPECT_EQ(message.rfind("no config for resources_servers 'mcqa/hard': "
                          "resources_servers/mcqa/configs/hard.yaml is not in the search roots",
                          0),
            0u)
      << message;
}

TEST(SelectorConfigPath, AModelIsNotAResourcesServer) {
  auto message =
      config_error_of([] { selector_config_path("resources_servers", "replay_model", {}); });
  EXPECT_CONTAINS(message, "no config for resources_servers 'replay_model'");
}

// ---- bundled_preset_text: NeMo Gym's preset paths in config_paths ----

TEST(BundledPresetText, NeMoGymPresetPathsGiveTheBundledYaml) {
  const fs::path root = GYM_SOURCE_ROOT;
  EXPECT_EQ(bundled_preset_text("responses_api_models/vllm_model/configs/vllm_model.yaml"),
            read_text(root / "src/models/configs/vllm_model.yaml"));
  EXPECT_EQ(
      bundled_preset_text("./responses_api_models/vllm_model/configs/vllm_model_for_training.yaml"),
      read_text(root / "src/models/configs/vllm_model_for_training.yaml"));
  EXPECT_EQ(bundled_preset_text("responses_api_models/openai_model/configs/openai_model.yaml"),
            read_text(root / "src/models/configs/openai_model.yaml"));
  EXPECT_EQ(bundled_preset_text("resources_servers/mcqa/configs/mcqa.yaml"),
            read_text(root / "environments/mcqa/configs/mcqa.yaml"));
}

TEST(BundledPresetText, OtherPathsAreNotPresets) {
  for (const char* path :
       {"responses_api_models/vllm_model/configs/vllm_model_completions.yaml",
        "responses_api_models/vllm_model/vllm_model.yaml",
        "responses_api_models/vllm_model/configs/vllm_model.yml",
        "resources_servers/vllm_model/configs/vllm_model.yaml",
        "/responses_api_models/vllm_model/configs/vllm_model.yaml",
        "x/responses_api_models/vllm_model/configs/vllm_model.yaml", "vllm_model.yaml", ""})
    EXPECT_FALSE(bundled_preset_text(path)) << path;
}

// issue 13.12: the written preset file is deleted at exit; a message names the preset instead.
TEST(SelectorConfigPath, MessagesNameThePresetNotItsTemporaryFile) {
  auto path = selector_config_path("resources_servers", "mcqa", {});
  ASSERT_TRUE(fs::exists(path));
  EXPECT_EQ(name_presets_in("problem at " + path + ":3 and again in " + path),
            "problem at the built-in preset resources_servers/mcqa/configs/mcqa.yaml:3 and again "
            "in the built-in preset resources_servers/mcqa/configs/mcqa.yaml");
  EXPECT_EQ(name_presets_in("nothing to replace"), "nothing to replace");
}

}  // namespace
}  // namespace gym::orchestrator
