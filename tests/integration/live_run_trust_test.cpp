// `gym eval run` against a model endpoint that misbehaves the way live ones do (issue 27): the
// run stops when the endpoint is gone or refuses every rollout the same way, the endpoint's
// outages never use up a rollout's attempts, long rollouts are not "silent", progress shows while
// nothing finishes, and what is printed tells the truth (no key in clear, partial results said
// to be partial). Every test runs gym and the fake endpoint (tests/support/fake_openai.cpp) as
// processes and counts the rows: nothing is lost or written twice across a failure and the
// resume after it.
#include "files.h"
#include "live_deployment.h"
#include "process.h"
#include "temp_dir.h"
#include "text_search.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <signal.h>

#include <set>
#include <thread>

namespace json = boost::json;
using gym::test::FakeEndpoint;
using gym::test::LoggedProcess;
using gym::test::read_jsonl;
using gym::test::read_text;
using gym::test::TempDir;
using gym::test::write_file;

namespace {

constexpr const char* kSecret = "sk-live-trust-5ecret-77ab";

std::string gym_binary() { return gym::test::build_path("src/cli/gym"); }

// The command of a run against `endpoint` (a base URL) with the key, writing `out`.
std::string eval_command(const std::string& endpoint, const std::string& input,
                         const std::string& out, const std::string& extra = "") {
  return gym::test::live_eval_command(endpoint, input, out, extra, kSecret);
}

using gym::test::contains;

// The (task, rollout) keys of a rollouts file; a test failure when one appears twice.
std::set<std::pair<std::int64_t, std::int64_t>> unique_keys(const std::string& path) {
  std::set<std::pair<std::int64_t, std::int64_t>> keys;
  for (const auto& row : read_jsonl(path)) {
    auto key = std::pair{row.at("_ng_task_index").to_number<std::int64_t>(),
                         row.at("_ng_rollout_index").to_number<std::int64_t>()};
    EXPECT_TRUE(keys.insert(key).second)
        << "rollout (" << key.first << ", " << key.second << ") written twice in " << path;
  }
  return keys;
}

}  // namespace

// Item 1: the endpoint dies mid-run. The model server declares it unavailable after
// model_endpoint_unavailable_seconds of refusals; the run stops with exit 2 naming the endpoint
// and the --resume command, instead of spending every rollout's retry budget. Once an endpoint
// answers on the same URL, --resume completes the run: every rollout once.
TEST(LiveRunTrust, ADeadEndpointStopsTheRunAndResumeCompletesIt) {
  auto fake = std::make_unique<FakeEndpoint>(std::vector<std::string>{"--delay-ms", "100"});
  const int port = fake->port;
  const std::string base = fake->base();
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(40));
  const auto out = tmp.file("out.jsonl");
  const std::string command = eval_command(base, input, out,
                                           "--concurrency 2 ++model_endpoint_unavailable_seconds=1 "
                                           "++global_http_retry_budget_seconds=600");
  LoggedProcess run(command, tmp.file("run.log"));
  for (int i = 0; i < 600 && read_jsonl(out).size() < 4; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_GE(read_jsonl(out).size(), 4u) << run.output();
  fake.reset();  // the endpoint is gone
  const int code = run.child().wait_exit(std::chrono::seconds(120));
  const auto log = run.output();
  EXPECT_EQ(code, 2) << log;
  EXPECT_TRUE(contains(log, "collection stopped: model endpoint " + base)) << log;
  EXPECT_TRUE(contains(log, "is unavailable")) << log;
  EXPECT_TRUE(contains(log, "--resume")) << log;
  EXPECT_FALSE(contains(log, kSecret)) << "the resume command masks the key:\n" << log;
  EXPECT_TRUE(contains(log, "--model-api-key ****")) << log;
  const auto done = read_jsonl(out).size();
  EXPECT_LT(done, 40u);
  // No aggregate metrics for a run that was cut short.
  EXPECT_FALSE(std::filesystem::exists(tmp.file("out_aggregate_metrics.json"))) << log;
  // The failure rows name the endpoint and say it was the endpoint's fault.
  const auto failures = read_jsonl(tmp.file("out_failures.jsonl"));
  ASSERT_FALSE(failures.empty()) << log;
  for (const auto& row : failures) {
    EXPECT_EQ(row.at("_ng_failure_endpoint").as_string().starts_with(base), true)
        << json::serialize(row);
    EXPECT_TRUE(row.contains("_ng_failure_endpoint_fault")) << json::serialize(row);
  }

  // The endpoint is back on the same URL; three failed stops would have used up every attempt
  // if the endpoint's failures counted. --resume runs the rest, each rollout once.
  FakeEndpoint back({"--port", std::to_string(port)});
  auto r = gym::test::run_command(command + " --resume 2>&1");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "failures caused by the model endpoint (not counted as attempts)"))
      << r.output;
  EXPECT_EQ(unique_keys(out).size(), 40u) << r.output;
}

// Item 2: three runs against an endpoint that answers 503 to everything use up no attempt: the
// fourth, with the endpoint healthy, runs every rollout.
TEST(LiveRunTrust, EndpointOutagesDoNotUseUpAttempts) {
  FakeEndpoint fake;
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(3));
  const auto out = tmp.file("out.jsonl");
  const std::string command = eval_command(fake.base(), input, out,
                                           "++model_endpoint_unavailable_seconds=1 "
                                           "++model_endpoint_readiness_timeout_seconds=0");
  for (int run = 0; run < 3; ++run) {
    fake.script(R"([{"status":503,"times":100000,"body":{"error":{"message":"overloaded"}}}])");
    auto r = gym::test::run_command(command + (run ? " --resume" : "") + " 2>&1");
    EXPECT_NE(r.code, 0) << r.output;
    EXPECT_FALSE(contains(r.output, kSecret)) << r.output;
    auto reset = gym::test::http_raw(fake.port, gym::test::post("/reset", "{}"));
    ASSERT_EQ(gym::test::status_of(reset), 200) << reset;
  }
  auto r = gym::test::run_command(command + " --resume 2>&1");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "- 0 hit max_attempts=3 -> not retried")) << r.output;
  EXPECT_EQ(unique_keys(out).size(), 3u) << r.output;
}

// Item 2, the other half: a resume that leaves rollouts without a result (out of attempts) exits
// non-zero and says how to give them more.
TEST(LiveRunTrust, AResumeThatLeavesRolloutsWithoutAResultSaysSoAndFails) {
  FakeEndpoint fake;
  fake.script(R"([{"status":400,"times":1000,"body":{"error":{"message":"bad tool schema"}}}])");
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(2));
  const auto out = tmp.file("out.jsonl");
  const std::string command =
      "NEMO_GYM_MAX_ROLLOUT_ATTEMPTS=1 " + eval_command(fake.base(), input, out);
  auto first = gym::test::run_command(command + " 2>&1");
  EXPECT_EQ(first.code, 3) << first.output;
  auto again = gym::test::run_command(command + " --resume 2>&1");
  EXPECT_EQ(again.code, 3) << again.output;
  EXPECT_TRUE(contains(again.output, "2 rollouts have no result")) << again.output;
  EXPECT_TRUE(contains(again.output, "NEMO_GYM_MAX_ROLLOUT_ATTEMPTS=4 ")) << again.output;
  EXPECT_FALSE(contains(again.output, kSecret)) << again.output;
  EXPECT_EQ(read_jsonl(tmp.file("out_failures.jsonl")).size(), 2u);
}

// Item 4: the same 4xx for model_endpoint_error_limit rollouts in a row stops the run instead of
// failing every row the same way; the summary groups the failures by cause.
TEST(LiveRunTrust, TheSameRefusalForManyRolloutsInARowStopsTheRun) {
  FakeEndpoint fake;
  fake.script(R"([{"status":401,"times":1000,"body":{"error":{"message":"Incorrect API key"}}}])");
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(30));
  const auto out = tmp.file("out.jsonl");
  auto r = gym::test::run_command(
      eval_command(fake.base(), input, out, "--concurrency 1 ++model_endpoint_error_limit=5") +
      " 2>&1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "answered HTTP 401 to 5 rollouts in a row")) << r.output;
  EXPECT_TRUE(contains(r.output, "Incorrect API key")) << r.output;
  EXPECT_TRUE(contains(
      r.output, "5 \u00d7 model endpoint " + fake.base() + "/chat/completions answered HTTP 401"))
      << r.output;
  EXPECT_EQ(read_jsonl(tmp.file("out_failures.jsonl")).size(), 5u) << r.output;
  EXPECT_TRUE(read_jsonl(out).empty());
}

// Item 10: key metrics over partial data say so, and the causes are grouped at the end.
TEST(LiveRunTrust, ResultsOverPartOfTheRolloutsSaySo) {
  FakeEndpoint fake;
  // Two answers, then refusals for the rest (a 4xx of the request's own: it counts).
  fake.script(R"([{"content":"Sunny"},{"content":"Rainy"},)"
              R"({"status":400,"times":1000,"body":{"error":{"message":"bad request"}}}])");
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(6));
  const auto out = tmp.file("out.jsonl");
  auto r =
      gym::test::run_command(eval_command(fake.base(), input, out, "--concurrency 1") + " 2>&1");
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_TRUE(contains(r.output, "the results and key metrics are over 2 of 6 rollouts; 4 failed"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "4 \u00d7 model endpoint")) << r.output;
}

// Item 3: a context-length 400 keeps NeMo Gym's row shape (an empty turn, scored) but the row
// carries the endpoint's message and the summary counts it.
TEST(LiveRunTrust, AContextLengthRefusalIsKeptInTheRowAndCounted) {
  FakeEndpoint fake;
  fake.script(
      R"([{"status":400,"times":1000,"body":{"object":"error","message":"This model's maximum )"
      R"(context length is 4096 tokens. However, you requested 9000 tokens.","type":)"
      R"("BadRequestError","code":400}}])");
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(2));
  const auto out = tmp.file("out.jsonl");
  auto r = gym::test::run_command(eval_command(fake.base(), input, out) + " 2>&1");
  const auto rows = read_jsonl(out);
  ASSERT_EQ(rows.size(), 2u) << r.output;
  for (const auto& row : rows) {
    const auto& error = row.at("response").at("error");
    ASSERT_TRUE(error.is_object()) << json::serialize(row);
    EXPECT_EQ(error.at("code"), "context_length_exceeded");
    EXPECT_TRUE(contains(std::string(error.at("message").as_string()), "maximum context length"));
  }
  EXPECT_TRUE(contains(r.output,
                       "in 2 of 2 rollouts the model endpoint refused a turn as too "
                       "long for the model's context"))
      << r.output;
}

// Items 5 and 9: with the endpoint hung, the bar shows 0/N at once and, without a terminal, a
// heartbeat names what is in flight and for how long; Ctrl-C prints the resume command with the
// key masked.
TEST(LiveRunTrust, AHungEndpointShowsAsAHeartbeatAndCtrlCMasksTheKey) {
  FakeEndpoint fake;
  fake.script(R"([{"hang":true,"times":100}])");
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(2));
  const auto out = tmp.file("out.jsonl");
  LoggedProcess run(eval_command(fake.base(), input, out), tmp.file("run.log"));
  EXPECT_TRUE(run.wait_for("0/2 [")) << run.output();
  EXPECT_TRUE(run.wait_for("2 in flight, oldest 0:00:", std::chrono::seconds(60))) << run.output();
  run.child().signal(SIGINT);
  EXPECT_NE(run.child().wait_exit(std::chrono::seconds(60)), 0);
  const auto log = run.output();
  EXPECT_TRUE(contains(log, "--resume")) << log;
  EXPECT_TRUE(contains(log, "--model-api-key ****")) << log;
  EXPECT_FALSE(contains(log, kSecret)) << log;
}

// Item 6: a rollout of two model calls of 2 s each (a tool call, then the answer) is not
// "silent" under a 3 s read timeout: the collector's /run gets no byte until the rollout ends,
// however long it takes, and each call on the way is well within the timeout.
TEST(LiveRunTrust, ARolloutLongerThanTheReadTimeoutCompletes) {
  FakeEndpoint fake({"--delay-ms", "2000"});
  const std::string tool_call =
      R"({"answer":{"id":"c","object":"chat.completion","created":0,"model":"fake-model",)"
      R"("choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant",)"
      R"("content":null,"tool_calls":[{"id":"call_1","type":"function","function":)"
      R"({"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]}}]}})";
  fake.script("[" + tool_call + R"(,{"content":"Sunny"},)" + tool_call +
              R"(,{"content":"Rainy"}])");
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(2));
  const auto out = tmp.file("out.jsonl");
  auto r =
      gym::test::run_command(eval_command(fake.base(), input, out,
                                          "--concurrency 1 ++global_http_read_timeout_seconds=3") +
                             " 2>&1");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(unique_keys(out).size(), 2u) << r.output;
  EXPECT_EQ(fake.state().at("served").to_number<int>(), 4) << r.output;
}

// Item 14: --resume with a larger --num-repeats runs the added rollouts.
TEST(LiveRunTrust, ResumeWithMoreRepeatsRunsTheAddedRollouts) {
  FakeEndpoint fake;
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(2));
  const auto out = tmp.file("out.jsonl");
  auto first =
      gym::test::run_command(eval_command(fake.base(), input, out, "--num-repeats 1") + " 2>&1");
  ASSERT_EQ(first.code, 0) << first.output;
  auto more = gym::test::run_command(
      eval_command(fake.base(), input, out, "--num-repeats 3 --resume") + " 2>&1");
  EXPECT_EQ(more.code, 0) << more.output;
  EXPECT_TRUE(contains(more.output, "- 4 rollouts added: the input now expands to more"))
      << more.output;
  EXPECT_EQ(unique_keys(out).size(), 6u) << more.output;
  EXPECT_EQ(read_jsonl(tmp.file("out_materialized_inputs.jsonl")).size(), 6u);
}

// Item 13: two runs at once, each with its private deployment, do not collide on a port.
TEST(LiveRunTrust, TwoRunsAtOnceEachGetTheirOwnPorts) {
  FakeEndpoint fake({"--delay-ms", "300"});
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(4));
  LoggedProcess a(eval_command(fake.base(), input, tmp.file("a.jsonl")), tmp.file("a.log"));
  LoggedProcess b(eval_command(fake.base(), input, tmp.file("b.jsonl")), tmp.file("b.log"));
  EXPECT_EQ(a.child().wait_exit(std::chrono::seconds(120)), 0) << a.output();
  EXPECT_EQ(b.child().wait_exit(std::chrono::seconds(120)), 0) << b.output();
  EXPECT_EQ(unique_keys(tmp.file("a.jsonl")).size(), 4u);
  EXPECT_EQ(unique_keys(tmp.file("b.jsonl")).size(), 4u);
}

// Item 7: rollouts whose collector gave up are not finished behind its back. With a deployment
// of its own (--no-serve), an interrupted collector's rollouts stop: the agent's handler is
// cancelled when the collector's connection closes, and with it the model calls it was making.
// Every answer here is a tool call, so an abandoned rollout would call the model on and on.
TEST(LiveRunTrust, RolloutsTheCollectorAbandonedStopCallingTheModel) {
  FakeEndpoint fake({"--delay-ms", "1000"});
  const std::string tool_call =
      R"({"times":100000,"answer":{"id":"c","object":"chat.completion","created":0,)"
      R"("model":"fake-model","choices":[{"index":0,"finish_reason":"tool_calls","message":)"
      R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",)"
      R"("function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]}}]}})";
  fake.script("[" + tool_call + "]");
  TempDir tmp;
  gym::test::Deployment d(
      "--resources-server example_single_tool_call --model-type vllm_model "
      "--model-url " +
          fake.base() + " --model fake-model",
      tmp.file("deployment.log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(4));
  const auto out = tmp.file("out.jsonl");
  const std::string collect =
      gym_binary() + " eval run --no-serve ++head_server.port=" + std::to_string(d.head_port()) +
      " --agent example_single_tool_call_simple_agent --input " + input + " --output " + out;
  LoggedProcess run(collect, tmp.file("run.log"));
  for (int i = 0; i < 600 && fake.received().size() < 8; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_GE(fake.received().size(), 8u) << run.output();  // every rollout is on its 2nd call
  run.child().signal(SIGINT);
  EXPECT_EQ(run.child().wait_exit(std::chrono::seconds(30)), 130) << run.output();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // calls on the wire end
  const auto settled = fake.received().size();
  std::this_thread::sleep_for(std::chrono::seconds(5));  // ~5 more calls per live rollout
  EXPECT_EQ(fake.received().size(), settled) << "abandoned rollouts kept calling the model";
  EXPECT_TRUE(read_jsonl(out).empty());

  // The deployment is intact: with the endpoint answering, --resume runs each rollout once.
  auto reset = gym::test::http_raw(fake.port, gym::test::post("/reset", "{}"));
  ASSERT_EQ(gym::test::status_of(reset), 200) << reset;
  auto r = gym::test::run_command(collect + " --resume 2>&1");
  EXPECT_EQ(r.code, 0) << r.output << d.output();
  EXPECT_EQ(unique_keys(out).size(), 4u) << r.output;
}
