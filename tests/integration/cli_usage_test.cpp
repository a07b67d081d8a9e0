// The gym binary's command line and output as a user meets them (issue 13.12-13.14): did-you-mean
// for flags and verbs, typed numeric flags, usage and --help, `gym list`, errors that name
// built-in presets, a closed stdout, the setup profiles and `cmake --install`.
#include "process.h"
#include "temp_dir.h"
#include "text_search.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;
namespace json = boost::json;
using gym::test::TempDir;

namespace {

std::string gym_binary() { return gym::test::build_path("src/cli/gym"); }

gym::test::CommandResult run_gym(const std::string& args) {
  return gym::test::run_command(gym_binary() + " " + args);
}

using gym::test::contains;

// A program on a pseudo-terminal, as a user's shell runs it: what it prints arrives as the
// terminal shows it (with the echo of typed keys), and typing Ctrl-C sends SIGINT.
class OnTerminal {
 public:
  explicit OnTerminal(std::vector<std::string> argv) {
    pid_ = ::forkpty(&master_, nullptr, nullptr, nullptr);
    if (pid_ == 0) {
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~OnTerminal() {
    if (pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) ::close(master_);
  }
  // Reads until `text` appeared (at `from` or later) or the program closed the terminal or
  // `limit` passed.
  bool read_until(const std::string& text, std::chrono::seconds limit, std::size_t from = 0) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    auto seen = [&] { return screen_.find(text, from) != std::string::npos; };
    while (!seen() && std::chrono::steady_clock::now() < deadline) {
      pollfd p{master_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      auto n = ::read(master_, buf, sizeof buf);
      if (n <= 0) break;  // EIO once the program and its children are gone
      screen_.append(buf, static_cast<std::size_t>(n));
    }
    return seen();
  }
  void type(const std::string& keys) { (void)!::write(master_, keys.data(), keys.size()); }
  int wait_exit() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  const std::string& screen() const { return screen_; }

 private:
  pid_t pid_ = -1;
  int master_ = -1;
  std::string screen_;
};

}  // namespace

TEST(CliUsage, UnknownFlagGetsADidYouMeanAndStartsNothing) {
  auto r = run_gym("eval run --inputs rows.jsonl --output out.jsonl");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "gym eval run: unknown flag --inputs; did you mean --input?"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "Run `gym eval run --help` for its flags.")) << r.output;
  // After a flag without a value, the next argument is checked too.
  auto after_flag = run_gym("eval run --no-serve --inputs rows.jsonl --output out.jsonl");
  EXPECT_EQ(after_flag.code, 1) << after_flag.output;
  EXPECT_TRUE(contains(after_flag.output, "did you mean --input?")) << after_flag.output;
  EXPECT_FALSE(contains(r.output, "Head server")) << r.output;
}

TEST(CliUsage, MisspeltVerbGetsADidYouMean) {
  auto r = run_gym("env strat");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "gym env: unknown command 'strat'; did you mean 'start'?"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "Commands: start, status")) << r.output;
  auto top = run_gym("evall run");
  EXPECT_EQ(top.code, 1) << top.output;
  EXPECT_TRUE(contains(top.output, "did you mean 'eval'?")) << top.output;
}

TEST(CliUsage, NumericFlagsAreCheckedAndTheErrorNamesTheFlag) {
  for (const auto& [flag, value] : {std::pair<std::string, std::string>{"--limit", "ten"},
                                    {"--num-repeats", "0"},
                                    {"--concurrency", "1.5"},
                                    {"--temperature", "hot"},
                                    {"--top-p", "2"},
                                    {"--max-output-tokens", "-1"}}) {
    auto r = run_gym("eval run --input rows.jsonl --output out.jsonl " + flag + " " + value);
    EXPECT_EQ(r.code, 1) << flag << ": " << r.output;
    EXPECT_TRUE(contains(r.output, flag + ": expects a ")) << flag << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "got '" + value + "'")) << flag << ": " << r.output;
    // Not the config key the flag becomes.
    EXPECT_FALSE(contains(r.output, "num_samples_in_parallel")) << r.output;
    EXPECT_FALSE(contains(r.output, "responses_create_params")) << r.output;
  }
}

TEST(CliUsage, HelpNamesTheProgramAndExplainsOverrides) {
  auto r = run_gym("eval run --help");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "Usage: gym eval run")) << r.output;
  EXPECT_TRUE(contains(r.output, "++key=value")) << r.output;
  EXPECT_TRUE(contains(r.output, "+key=value")) << r.output;
  EXPECT_TRUE(contains(r.output, "--quiet")) << r.output;
  auto grouped = run_gym("eval run -vq --help");  // short flags given together are known
  EXPECT_EQ(grouped.code, 0) << grouped.output;
  auto top = run_gym("--help");
  EXPECT_TRUE(contains(top.output, "Usage: gym ")) << top.output;
  EXPECT_TRUE(contains(top.output, "list")) << top.output;
}

TEST(CliUsage, ListShowsEnvironmentsAgentsAndModelTypes) {
  auto r = run_gym("list");
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* expected :
       {"Environments (--resources-server NAME):", "  mcqa\n", "mcqa_simple_agent",
        "Model types (--model-type NAME):", "  replay_model\n", "  vllm_model\n", "simple_agent"})
    EXPECT_TRUE(contains(r.output, expected)) << expected << "\n" << r.output;
  auto j = run_gym("list --json");
  ASSERT_EQ(j.code, 0) << j.output;
  auto listing = json::parse(j.output).as_object();
  EXPECT_TRUE(listing.contains("environments"));
  EXPECT_TRUE(listing.contains("agents"));
  EXPECT_TRUE(listing.contains("model_types"));
}

TEST(CliUsage, MissingModelSuggestsModelTypeAndNamesThePresetNotATempFile) {
  TempDir tmp;  // the presets are written below TMPDIR
  auto r = gym::test::run_command("TMPDIR=" + tmp.path() + " " + gym_binary() +
                                  " config show --resources-server mcqa");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--model-type")) << r.output;
  EXPECT_TRUE(contains(r.output, "the built-in preset resources_servers/mcqa/configs/mcqa.yaml"))
      << r.output;
  EXPECT_FALSE(contains(r.output, tmp.path())) << r.output;
  EXPECT_FALSE(contains(r.output, "gym-presets-")) << r.output;
}

// issue 13.13: `gym env start | head` stops the deployment and removes its temporary files.
TEST(CliOutput, AClosedStdoutStopsTheDeploymentAndLeavesNoTemporaryFolder) {
  TempDir tmp, data;  // tmp: TMPDIR of gym, where the presets are written
  auto recorded = data.write("rollouts.jsonl", "");
  const std::string command =
      "{ TMPDIR=" + tmp.path() + " timeout 60 " + gym_binary() +
      " env start --resources-server example_single_tool_call --model-type replay_model"
      " ++policy_model.responses_api_models.replay_model.rollouts_jsonl_fpaths=[" +
      recorded + "] ++head_server.port=0 | head -n 1; }";
  auto r = gym::test::run_command(command);
  EXPECT_TRUE(contains(r.output, "stdout was closed")) << r.output;
  for (const auto& entry : fs::directory_iterator(tmp.path()))
    ADD_FAILURE() << "left behind: " << entry.path() << "\n" << r.output;
}

// issue 13.13: what gym prints after Ctrl-C starts on a line of its own, not after the echoed ^C.
TEST(CliOutput, CtrlCMessageStartsOnItsOwnLine) {
  TempDir tmp;
  auto config = tmp.write("weather.yaml",
                          "weather:\n  resources_servers:\n    example_single_tool_call:\n"
                          "      domain: agent\n");
  OnTerminal gym({gym_binary(), "env", "start", "--config", config, "++head_server.port=0"});
  ASSERT_TRUE(gym.read_until("servers ready!", std::chrono::seconds(60))) << gym.screen();
  // The table of servers follows; its last line ends with the pid. Ctrl-C comes after it, so
  // that nothing gym prints anyway lands behind the echoed ^C.
  ASSERT_TRUE(gym.read_until(" pid ", std::chrono::seconds(20))) << gym.screen();
  ASSERT_TRUE(gym.read_until("\r\n", std::chrono::seconds(20), gym.screen().rfind(" pid ")))
      << gym.screen();
  gym.type("\x03");                                      // Ctrl-C
  gym.read_until("\x7f\x7f", std::chrono::seconds(20));  // everything, until the terminal closes
  EXPECT_EQ(gym.wait_exit(), 130) << gym.screen();
  auto echo = gym.screen().find("^C");
  ASSERT_NE(echo, std::string::npos) << gym.screen();
  EXPECT_EQ(gym.screen().substr(echo, 4), "^C\r\n") << gym.screen();
}

// issue 13.14: `make demo` installs only what building gym needs.
TEST(Setup, TheDemoProfileInstallsNoTestOrBenchmarkPeers) {
  const std::string script = std::string(GYM_SOURCE_ROOT) + "/scripts/setup.sh";
  auto demo = gym::test::run_command("bash " + script + " --print demo");
  ASSERT_EQ(demo.code, 0) << demo.output;
  EXPECT_TRUE(contains(demo.output, "libjemalloc-dev\n")) << demo.output;
  EXPECT_TRUE(contains(demo.output, "libgrpc++-dev\n")) << demo.output;  // the OTLP/gRPC exporter
  for (const char* peer : {"prometheus\n", "wrk\n", "nginx-light\n", "python3\n", "nodejs\n",
                           "npm\n", "libgtest-dev\n", "libbenchmark-dev\n"})
    EXPECT_FALSE(contains(demo.output, peer)) << peer;
  auto test = gym::test::run_command("bash " + script + " --print test");
  EXPECT_TRUE(contains(test.output, "libgtest-dev\n")) << test.output;
  EXPECT_TRUE(contains(test.output, "prometheus\n")) << test.output;
  EXPECT_FALSE(contains(test.output, "wrk\n")) << test.output;
  // The external-server tests run the Python template environment (issue 15).
  EXPECT_TRUE(contains(test.output, "python3-fastapi\n")) << test.output;
  EXPECT_TRUE(contains(test.output, "python3-yaml\n")) << test.output;
  auto bench = gym::test::run_command("bash " + script + " --print bench");
  EXPECT_TRUE(contains(bench.output, "wrk\n")) << bench.output;
  EXPECT_TRUE(contains(bench.output, "python3-aiohttp\n")) << bench.output;
}

// issue 13.14: `make install` = `cmake --install` with a prefix: gym and its alias names on PATH.
TEST(Setup, CmakeInstallPutsGymAndItsAliasesInPrefixBin) {
  TempDir prefix;
  auto r = gym::test::run_command("cmake --install " + std::string(GYM_BUILD_DIR) + " --prefix " +
                                  prefix.path());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(fs::is_regular_file(prefix.file("bin/gym"))) << r.output;
  EXPECT_TRUE(fs::is_symlink(prefix.file("bin/ng"))) << r.output;
  auto version = gym::test::run_command("PATH=" + prefix.path() + "/bin:$PATH gym --version");
  EXPECT_EQ(version.code, 0) << version.output;
  EXPECT_TRUE(contains(version.output, "gym-cpp ")) << version.output;
}

// Issue 27.16: an installed gym needs no source tree. The prefix holds the environments' presets,
// example data and python_example (PREFIX/share/gym-cpp), found beside the binary; the check
// runs the installed gym with the source tree (GYM_SOURCE_ROOT, the build dir in it) hidden under
// an empty tmpfs in a private mount namespace, from a directory outside it.
TEST(Setup, AnInstalledGymRunsWithoutTheSourceTree) {
  TempDir prefix, work;
  ASSERT_FALSE(fs::path(prefix.path()).string().starts_with(GYM_SOURCE_ROOT));
  auto install = gym::test::run_command("cmake --install " + std::string(GYM_BUILD_DIR) +
                                        " --prefix " + prefix.path());
  ASSERT_EQ(install.code, 0) << install.output;
  const std::string share = prefix.path() + "/share/gym-cpp/environments";
  EXPECT_TRUE(fs::is_regular_file(share + "/python_example/app.py"));
  EXPECT_TRUE(fs::is_regular_file(share + "/mcqa/data/example.jsonl"));
  EXPECT_FALSE(fs::exists(share + "/mcqa/mcqa.cpp"));
  // Debian's python3 first: the server needs FastAPI (scripts/setup.sh installs it).
  auto hidden = [&](const std::string& command) {
    return gym::test::run_command(
        "unshare -rm sh -c 'mount -t tmpfs none " + std::string(GYM_SOURCE_ROOT) + " && cd " +
        work.path() + " && PATH=/usr/bin:/bin:" + prefix.path() + "/bin " + command + "' 2>&1");
  };
  auto sealed = hidden("ls " + std::string(GYM_SOURCE_ROOT) + " | wc -l");
  ASSERT_EQ(sealed.code, 0) << sealed.output;
  ASSERT_EQ(sealed.output, "0\n") << "the source tree is still visible";

  auto list = hidden("gym list");
  ASSERT_EQ(list.code, 0) << list.output;
  EXPECT_TRUE(contains(list.output, "  mcqa\n")) << list.output;
  EXPECT_TRUE(contains(list.output, "external: app.py in " + share + "/python_example"))
      << list.output;

  auto run = hidden(
      "gym eval run --resources-server python_example --model-type replay_model --split example "
      "--output out/python_example.jsonl ++head_server.port=0");
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_TRUE(fs::is_regular_file(work.file("out/python_example_aggregate_metrics.json")))
      << run.output;

  // A C++ environment of one's own, in NeMo Gym's layout outside any checkout: listed through
  // --search-dir, and the message says how to build it in and run it.
  auto init = hidden("gym env init word_count --into " + work.path() + "/mine/resources_servers");
  ASSERT_EQ(init.code, 0) << init.output;
  EXPECT_TRUE(
      contains(init.output, "-DGYM_EXTRA_ENVIRONMENTS=" + work.path() + "/mine/resources_servers"))
      << init.output;
  EXPECT_TRUE(contains(init.output, "gym eval run --search-dir " + work.path() +
                                        "/mine --resources-server word_count"))
      << init.output;
  auto mine = hidden("gym list --search-dir " + work.path() + "/mine");
  ASSERT_EQ(mine.code, 0) << mine.output;
  EXPECT_TRUE(contains(mine.output, "C++ in " + work.path() +
                                        "/mine/resources_servers/word_count, not built into "
                                        "this gym"))
      << mine.output;
}
