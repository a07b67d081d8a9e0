// The preflight of model endpoints at start (issue 27;
// docs/reference/model-servers.md#checks-at-start): `gym eval run` as a process against the fake
// OpenAI-compatible endpoint (tests/support/fake_openai.cpp). A base URL without /v1, a model the
// endpoint does not serve, or --max-output-tokens that cannot fit the served max_model_len stop the
// run before any rollout (exit 2), leaving the user's files as they were; a working setup still
// runs; a slow endpoint is reported while we wait.
#include "files.h"
#include "live_deployment.h"
#include "process.h"
#include "reserved_port.h"
#include "temp_dir.h"
#include "text_search.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

namespace fs = std::filesystem;
using gym::test::FakeEndpoint;
using gym::test::read_jsonl;
using gym::test::read_text;
using gym::test::TempDir;
using gym::test::write_file;

namespace {

// One row of example_single_tool_call (its agent answers after one model turn).
constexpr const char* kRow = "{\"responses_create_params\":{\"input\":\"Weather in Oslo?\"}}\n";

// `gym eval run` against `model_url` serving `model`, output in `tmp`/out.jsonl; `extra` flags.
std::string eval_command(TempDir& tmp, const std::string& model_url, const std::string& model,
                         const std::string& extra = "") {
  return gym::test::build_path("src/cli/gym") +
         " eval run --resources-server example_single_tool_call --model-type vllm_model"
         " --model-url " +
         model_url + " --model " + model +
         " --agent example_single_tool_call_simple_agent --input " +
         write_file(tmp, "in.jsonl", kRow) + " --output " + tmp.file("out/out.jsonl") + " " +
         extra + " ++head_server.port=0 2>&1";
}

gym::test::CommandResult eval(TempDir& tmp, const std::string& model_url, const std::string& model,
                              const std::string& extra = "") {
  return gym::test::run_command(eval_command(tmp, model_url, model, extra));
}

using gym::test::contains;

// What an earlier run left in out/: every file and its text.
std::map<std::string, std::string> earlier_run(TempDir& tmp) {
  fs::create_directories(tmp.file("out"));
  for (const char* name : {"out.jsonl", "out_failures.jsonl", "out_materialized_inputs.jsonl",
                           "out_aggregate_metrics.json"})
    write_file(tmp, std::string("out/") + name, std::string("an earlier run's ") + name + "\n");
  std::map<std::string, std::string> files;
  for (const auto& f : fs::directory_iterator(tmp.file("out")))
    files[f.path().filename().string()] = read_text(f.path());
  return files;
}

std::map<std::string, std::string> files_in(TempDir& tmp) {
  std::map<std::string, std::string> files;
  for (const auto& f : fs::directory_iterator(tmp.file("out")))
    files[f.path().filename().string()] = read_text(f.path());
  return files;
}

}  // namespace

TEST(EndpointPreflight, AWorkingSetupStillRuns) {
  FakeEndpoint fake;
  TempDir tmp;
  auto r = eval(tmp, fake.base(), "fake-model", "--max-output-tokens 1000");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(read_jsonl(tmp.file("out/out.jsonl")).size(), 1u) << r.output;
  EXPECT_GE(fake.state().at("models_probed").to_number<int>(), 1);
  EXPECT_FALSE(contains(r.output, "still waiting")) << r.output;
}

TEST(EndpointPreflight, ABaseUrlWithoutV1IsRefusedAndTheUsersFilesStayAsTheyWere) {
  FakeEndpoint fake;
  TempDir tmp;
  const auto before = earlier_run(tmp);
  const std::string url = "http://127.0.0.1:" + std::to_string(fake.port);
  auto r = eval(tmp, url, "fake-model");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "GET " + url + "/models answered 404")) << r.output;
  EXPECT_TRUE(contains(r.output, "not an OpenAI model list")) << r.output;
  EXPECT_TRUE(contains(r.output, "the base URL is probably wrong")) << r.output;
  EXPECT_TRUE(contains(r.output, "try " + url + "/v1")) << r.output;
  EXPECT_TRUE(contains(r.output, "policy_model.responses_api_models.vllm_model.base_url"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "model_endpoint_preflight: false")) << r.output;
  EXPECT_EQ(fake.state().at("served").to_number<int>(), 0) << "no rollout ran";
  EXPECT_EQ(files_in(tmp), before);
}

TEST(EndpointPreflight, AModelTheEndpointDoesNotServeIsRefusedListingWhatItServes) {
  std::vector<std::string> args;
  for (int i = 0; i < 25; ++i) {
    args.push_back("--served-model");
    args.push_back("org/model-" + std::to_string(100 + i));
  }
  FakeEndpoint fake(args);
  TempDir tmp;
  const auto before = earlier_run(tmp);
  auto r = eval(tmp, fake.base(), "org/model-999");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "does not serve model 'org/model-999'")) << r.output;
  EXPECT_TRUE(contains(r.output, "--model / policy_model_name")) << r.output;
  EXPECT_TRUE(contains(r.output, "policy_model.responses_api_models.vllm_model.model")) << r.output;
  EXPECT_TRUE(contains(r.output, "it serves: org/model-100, org/model-101")) << r.output;
  EXPECT_TRUE(contains(r.output, "org/model-119 (and 5 more)")) << r.output;  // the first 20
  EXPECT_FALSE(contains(r.output, "org/model-120")) << r.output;
  EXPECT_EQ(fake.state().at("served").to_number<int>(), 0) << "no rollout ran";
  EXPECT_EQ(files_in(tmp), before);

  // A served one runs.
  TempDir ok;
  auto served = eval(ok, fake.base(), "org/model-104");
  EXPECT_EQ(served.code, 0) << served.output;
}

TEST(EndpointPreflight, MaxOutputTokensThatCannotFitTheModelAreRefused) {
  FakeEndpoint fake({"--max-model-len", "4096"});
  TempDir tmp;
  const auto before = earlier_run(tmp);
  auto r = eval(tmp, fake.base(), "fake-model", "--max-output-tokens 8192");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "--max-output-tokens 8192 (responses_create_params.max_output_tokens) "
                       "cannot fit: " +
                           fake.base() +
                           " serves fake-model with max_model_len 4096 (prompt + output "
                           "must fit); lower --max-output-tokens"))
      << r.output;
  EXPECT_EQ(fake.state().at("served").to_number<int>(), 0) << "no rollout ran";
  EXPECT_EQ(files_in(tmp), before);
  // Equal does not fit either: the prompt needs at least one token.
  TempDir equal;
  EXPECT_EQ(eval(equal, fake.base(), "fake-model", "--max-output-tokens 4096").code, 2);
}

TEST(EndpointPreflight, ModelEndpointPreflightFalseSkipsTheChecks) {
  FakeEndpoint fake;
  TempDir tmp;
  auto r = eval(tmp, fake.base(), "not-listed", "++model_endpoint_preflight=false");
  EXPECT_EQ(r.code, 0) << r.output;  // the fake answers any model name
  EXPECT_FALSE(contains(r.output, "does not serve")) << r.output;
}

TEST(EndpointPreflight, SaysItIsWaitingUntilTheEndpointComesUp) {
  gym::test::ReservedPort port;  // refuses connections until the fake listens on it
  TempDir tmp;
  const std::string url = "http://127.0.0.1:" + port.text() + "/v1";
  // A 20 s limit: the waiting line comes every 3 s (a tenth of the limit, at least 3 s).
  gym::test::LoggedProcess gym(
      eval_command(tmp, url, "fake-model", "++model_endpoint_readiness_timeout_seconds=20"),
      tmp.file("log"));
  ASSERT_TRUE(gym.wait_for("still waiting for model endpoint " + url +
                               " (policy_model.responses_api_models.vllm_model.base_url): 0:",
                           std::chrono::seconds(15)))
      << gym.output();
  EXPECT_TRUE(contains(gym.output(), " of model_endpoint_readiness_timeout_seconds=20 s; last: "))
      << gym.output();
  EXPECT_TRUE(contains(gym.output(), "last: Connection refused")) << gym.output();
  FakeEndpoint fake({"--port", port.text()});
  EXPECT_EQ(gym.child().wait_exit(std::chrono::seconds(60)), 0) << gym.output();
  EXPECT_EQ(read_jsonl(tmp.file("out/out.jsonl")).size(), 1u) << gym.output();
}

TEST(EndpointPreflight, AnEndpointThatNeverComesUpFailsAfterTheTimeoutNamingIt) {
  gym::test::ReservedPort port;
  TempDir tmp;
  const std::string url = "http://127.0.0.1:" + port.text() + "/v1";
  auto r = eval(tmp, url, "fake-model", "++model_endpoint_readiness_timeout_seconds=7");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "still waiting for model endpoint " + url)) << r.output;
  EXPECT_TRUE(
      contains(r.output, "did not answer within model_endpoint_readiness_timeout_seconds=7"))
      << r.output;
  EXPECT_FALSE(fs::exists(tmp.file("out/out.jsonl")));
}
