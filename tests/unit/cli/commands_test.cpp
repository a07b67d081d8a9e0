// The verbs that start no server, run through the command line as a user types them:
// `gym list` and `gym env init` (cli/commands.h, cli/env_init.h).
#include "cli/command_line.h"
#include "cli/env_init.h"

#include "core/json_text.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "expect.h"
#include "files.h"
#include "temp_dir.h"

namespace gym::cli {
namespace {

namespace fs = std::filesystem;

// The exit code, stdout and stderr of `args`.
struct Ran {
  int code;
  std::string out, err;
};
Ran run_line(const std::vector<std::string>& args) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int code = run_command_line(args);
  Ran r{code, ::testing::internal::GetCapturedStdout(), ::testing::internal::GetCapturedStderr()};
  return r;
}

TEST(GymList, ASearchDirsEnvironmentsComeFirstThenTheBuiltInOnes) {
  gym::test::TempDir dir;
  dir.write("resources_servers/my_env/configs/my_env.yaml",
            "my_env:\n  resources_servers:\n    my_env:\n      entrypoint: app.py\n"
            "my_env_agent:\n  responses_api_agents:\n    simple_agent:\n"
            "      resources_server: {name: my_env}\n");
  dir.write("resources_servers/my_env/app.py", "print('serving')\n");
  const auto r = run_line({"gym", "list", "--json", "--search-dir", dir.path()});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto listed = core::parse_json(r.out).as_object();
  const auto& environments = listed.at("environments").as_array();
  ASSERT_FALSE(environments.empty());
  EXPECT_EQ(environments.front(), "my_env") << r.out;
  EXPECT_NE(std::find(environments.begin(), environments.end(),
                      boost::json::value("example_single_tool_call")),
            environments.end());
  const auto& agents = listed.at("agents").as_array();
  EXPECT_NE(std::find(agents.begin(), agents.end(),
                      boost::json::value(boost::json::object{{"name", "my_env_agent"},
                                                             {"environment", "my_env"}})),
            agents.end())
      << r.out;
  // Not built in: it runs from its folder.
  const auto& source = listed.at("environment_sources").as_array().front().as_object();
  EXPECT_CONTAINS(std::string(source.at("external").as_string()), "app.py in ");
  const auto& models = listed.at("model_types").as_array();
  EXPECT_NE(std::find(models.begin(), models.end(), boost::json::value("replay_model")),
            models.end());
}

TEST(GymEnvInit, WritesAFolderOnceAndRefusesBadNamesWithoutWriting) {
  gym::test::TempDir dir;
  auto r = run_line({"gym", "env", "init", "word_count", "--into", dir.path()});
  ASSERT_EQ(r.code, 0) << r.err;
  const fs::path folder = fs::path(dir.path()) / "word_count";
  for (const char* file : {"CMakeLists.txt", "word_count.cpp", "configs/word_count.yaml",
                           "data/example.jsonl", "tests/word_count_test.cpp", "README.md"})
    EXPECT_TRUE(fs::is_regular_file(folder / file)) << file;
  EXPECT_CONTAINS(gym::test::read_text(folder / "word_count.cpp"), "WordCountResourcesServer");
  EXPECT_EQ(gym::test::read_text(folder / "word_count.cpp").find("@ENV_"), std::string::npos);

  // Nothing is ever overwritten.
  std::ofstream(folder / "README.md") << "my own notes\n";
  r = run_line({"gym", "env", "init", "word_count", "--into", dir.path()});
  EXPECT_EQ(r.code, 1);
  EXPECT_CONTAINS(r.err, "word_count");
  EXPECT_EQ(gym::test::read_text(folder / "README.md"), "my own notes\n");

  r = run_line({"gym", "env", "init", "Word-Count", "--into", dir.path()});
  EXPECT_EQ(r.code, 1);
  EXPECT_CONTAINS(r.err, "is not an environment name");
  r = run_line({"gym", "env", "init", "mcqa", "--into", dir.path()});
  EXPECT_EQ(r.code, 1);
  EXPECT_CONTAINS(r.err, "mcqa");
  EXPECT_FALSE(fs::exists(fs::path(dir.path()) / "Word-Count"));
  EXPECT_FALSE(fs::exists(fs::path(dir.path()) / "mcqa"));
  EXPECT_EQ(environment_class_name("a_b2_c"), "AB2CResourcesServer");
}

}  // namespace
}  // namespace gym::cli
