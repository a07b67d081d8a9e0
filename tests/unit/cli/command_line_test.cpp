// What a gym command line means: cli/command_line.h. Parsing runs nothing; the few tests that run
// a verb use one that starts no server (config show, --version). tests/integration/gym_cli_test
// runs the binary itself.
#include "cli/command_line.h"

#include "core/config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "expect.h"
#include "temp_dir.h"

namespace gym::cli {
namespace {

using Words = std::vector<std::string>;

// parse_command_line, with what it printed.
struct Parsed {
  Invocation invocation;
  std::string out, err;
};
Parsed parse(const Words& args) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  Parsed p{parse_command_line(args), "", ""};
  p.out = ::testing::internal::GetCapturedStdout();
  p.err = ::testing::internal::GetCapturedStderr();
  return p;
}

// run(inv) and what it printed on stdout; the capture ends even when run throws.
std::string stdout_of_run(const Invocation& inv, int& code) {
  ::testing::internal::CaptureStdout();
  try {
    code = run(inv);
  } catch (...) {
    ::testing::internal::GetCapturedStdout();
    throw;
  }
  return ::testing::internal::GetCapturedStdout();
}

TEST(CommandLine, EvalRunFlagsBecomeOverridesOfTheirKeysAheadOfTheUsersOwn) {
  const auto p = parse({"gym", "eval", "run", "++limit=3", "--concurrency", "8", "-i", "a.jsonl",
                        "--resume", "--config", "c.yaml", "--temperature=0.5"});
  const auto& inv = p.invocation;
  ASSERT_FALSE(inv.exit_code) << p.err;
  EXPECT_EQ(inv.verb, Verb::eval_run);
  EXPECT_FALSE(inv.no_serve);
  EXPECT_EQ(inv.config.config_paths, Words{"c.yaml"});
  // The user's override comes last, so it wins over a flag that sets the same key.
  EXPECT_EQ(inv.config.overrides,
            (Words{"++input_jsonl_fpath=a.jsonl", "++num_samples_in_parallel=8",
                   "++responses_create_params.temperature=0.5", "++resume_from_cache=true",
                   "++limit=3"}));
}

TEST(CommandLine, NeMoGymsLegacyProgramNamesStandForTheirVerb) {
  auto p = parse({"/usr/local/bin/ng_collect_rollouts", "++input_jsonl_fpath=x.jsonl"});
  EXPECT_EQ(p.invocation.verb, Verb::eval_run);
  EXPECT_TRUE(p.invocation.no_serve);
  EXPECT_EQ(p.invocation.program, "gym");
  EXPECT_CONTAINS(p.err, "`ng_collect_rollouts` is deprecated; use `gym eval run --no-serve`");
  EXPECT_EQ(parse({"ng_run", "--resources-server", "mcqa"}).invocation.verb, Verb::env_start);
  EXPECT_EQ(parse({"ng_status"}).invocation.verb, Verb::env_status);
}

TEST(CommandLine, SubmitKeepsItsCommandLineForTheJobAndSetsTheSlurmBlock) {
  const Words after_submit{
      "--nodes",   "2",    "--sbatch=--exclusive", "--sbatch", "--comment='a b'", "--dry-run", "-o",
      "out.jsonl", "++x=1"};
  Words args{"gym", "eval", "submit"};
  args.insert(args.end(), after_submit.begin(), after_submit.end());
  const auto p = parse(args);
  const auto& inv = p.invocation;
  ASSERT_FALSE(inv.exit_code) << p.err;
  EXPECT_EQ(inv.verb, Verb::eval_submit);
  EXPECT_EQ(inv.submit.submit_args, after_submit);
  EXPECT_TRUE(inv.submit.dry_run);
  EXPECT_FALSE(inv.submit.wait);
  // Each --sbatch line a quoted list element, a quote in it doubled.
  EXPECT_EQ(inv.config.overrides,
            (Words{"++output_jsonl_fpath=out.jsonl", "++slurm.nodes=2",
                   "++slurm.sbatch_args=['--exclusive','--comment=''a b''']", "++x=1"}));
}

TEST(CommandLine, UsageErrorsAreSaidWithAHintAndEndTheCommand) {
  auto p = parse({"gym", "env", "strat"});
  EXPECT_EQ(p.invocation.exit_code, 1);
  EXPECT_CONTAINS(p.err, "did you mean 'start'?");
  p = parse({"gym", "eval", "run", "--concurency", "4"});
  EXPECT_EQ(p.invocation.exit_code, 1);
  EXPECT_CONTAINS(p.err, "--concurrency");
  p = parse({"gym", "eval", "run", "--concurrency", "zero"});
  EXPECT_EQ(p.invocation.exit_code, 1);
  EXPECT_CONTAINS(p.err, "--concurrency");
  // No verb: the help, and a failing exit code (nothing was done).
  p = parse({"gym"});
  EXPECT_EQ(p.invocation.exit_code, 1);
  EXPECT_CONTAINS(p.out, "eval");
  EXPECT_CONTAINS(p.out, "++key=v");
  // --help is no error.
  EXPECT_EQ(parse({"gym", "eval", "run", "--help"}).invocation.exit_code, 0);
}

TEST(CommandLine, ARefusedCommandSaysWhyAndFails) {
  gym::test::TempDir dir;
  ::testing::internal::CaptureStderr();
  // --model-api-key for a collection that starts no model server: refused before it starts.
  const int refused = run_command_line(
      {"gym", "eval", "run", "--no-serve", "--model-api-key", "sk-1", "--no-env-file"});
  const int missing =
      run_command_line({"gym", "telemetry", "report", dir.file("no-such-file.jsonl")});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(refused, 1) << err;
  EXPECT_CONTAINS(err, "--model-api-key");
  EXPECT_NE(missing, 0) << err;
  EXPECT_CONTAINS(err, "no-such-file.jsonl");
}

TEST(CommandLine, VersionAndConfigShowRunWithoutAServer) {
  auto p = parse({"gym", "--version", "--json"});
  EXPECT_EQ(p.invocation.verb, Verb::version);
  int code = -1;
  const std::string version = stdout_of_run(p.invocation, code);
  EXPECT_EQ(code, 0);
  EXPECT_CONTAINS(version, "\"nemo_gym\":\"0.7.0\"");

  gym::test::TempDir dir;
  const auto config = dir.write("c.yaml",
                                "my_token: tok-hidden\nmy_env:\n  resources_servers:\n"
                                "    example_single_tool_call:\n      domain: other\n");
  p = parse({"gym", "config", "show", "--config", config, "--no-env-file",
             "++my_env.resources_servers.example_single_tool_call.x=1"});
  ASSERT_EQ(p.invocation.verb, Verb::config_show);
  const std::string yaml = stdout_of_run(p.invocation, code);
  EXPECT_EQ(code, 0);
  EXPECT_CONTAINS(yaml, "example_single_tool_call");
  EXPECT_CONTAINS(yaml, "      x: 1");
  EXPECT_EQ(yaml.find("tok-hidden"), std::string::npos) << yaml;
}

}  // namespace
}  // namespace gym::cli
