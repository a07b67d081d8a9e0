// A model endpoint that misbehaves (issue 27,
// docs/reference/model-servers.md#failures-and-retries): vllm_model under the real `gym env start`
// and `gym eval run`, talking HTTP to the fake endpoint (tests/support/fake_openai.cpp) scripted to
// refuse, fail, reset, rate limit, hang, or refuse a conversation as too long. What a user must be
// able to trust: a dead endpoint fails calls within model_endpoint_unavailable_seconds, not the
// whole retry budget; a dropped answer is paid for at most 3 times; Retry-After is honoured; a 429
// storm logs a summary, not a line per retry; a call that takes too long names the setting; a
// context overflow keeps the endpoint's message.
#include "files.h"
#include "live_deployment.h"
#include "process.h"
#include "temp_dir.h"
#include "text_search.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <signal.h>

#include <chrono>
#include <string>

namespace json = boost::json;
using gym::test::Deployment;
using gym::test::FakeEndpoint;
using gym::test::post_json;
using gym::test::read_jsonl;
using gym::test::TempDir;
using gym::test::write_file;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kSecret = "sk-faults-test-5ecret-77aa";

std::string gym_binary() { return gym::test::build_path("src/cli/gym"); }

// `gym env start` of one vllm_model in front of `fake`, with `flags` (overrides, CLI flags).
std::string vllm_args(TempDir& tmp, const FakeEndpoint& fake, const std::string& flags = "") {
  return "--config " +
         write_file(tmp, "m.yaml",
                    "policy_model:\n  responses_api_models:\n    vllm_model:\n      base_url: " +
                        fake.base() + "\n      api_key: " + kSecret +
                        "\n      model: fake-model\n      return_token_id_information: false\n") +
         " " + flags;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string text_of(const gym::test::Answer& a) {
  return a.body.is_string() ? std::string(a.body.as_string()) : json::serialize(a.body);
}

using gym::test::count_of;

}  // namespace

TEST(ModelEndpointFaults, AnEndpointAnswering5xxBecomesUnavailableAndCallsFailFast) {
  FakeEndpoint fake;
  TempDir tmp;
  Deployment d(vllm_args(tmp, fake, "++model_endpoint_unavailable_seconds=2"), tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const int port = d.port_of("policy_model");
  fake.script(R"([{"status":503,"times":100000}])");
  // The retry budget is 300 s; the endpoint is given up after 2 s of nothing but 503s.
  auto start = Clock::now();
  auto a = post_json(port, "/v1/responses", R"({"input":"hi"})");
  EXPECT_LT(seconds_since(start), 10.0);
  EXPECT_EQ(a.status, 503) << text_of(a);
  const std::string prefix = "model endpoint " + fake.base() + "/chat/completions is unavailable: ";
  EXPECT_EQ(text_of(a).rfind(prefix, 0), 0u) << text_of(a);
  EXPECT_NE(text_of(a).find("was refused or answered 5xx (last: HTTP 503"), std::string::npos)
      << text_of(a);
  // A new call now gets one attempt.
  const auto before = fake.received().size();
  start = Clock::now();
  a = post_json(port, "/v1/responses", R"({"input":"again"})");
  EXPECT_LT(seconds_since(start), 1.5);
  EXPECT_EQ(a.status, 503) << text_of(a);
  EXPECT_EQ(fake.received().size(), before + 1);
  // The first answer makes it available again.
  ASSERT_EQ(gym::test::status_of(gym::test::http_raw(fake.port, gym::test::post("/reset", "{}"))),
            200);
  a = post_json(port, "/v1/responses", R"({"input":"back"})");
  EXPECT_EQ(a.status, 200) << text_of(a);
  EXPECT_TRUE(d.wait_for_output("model endpoint " + fake.base() + " answers again")) << d.output();
  const auto log = d.output();
  EXPECT_EQ(count_of(log, "model endpoint " + fake.base() + " is unavailable: "), 1u) << log;
  EXPECT_EQ(count_of(log, "model endpoint " + fake.base() + " answers again"), 1u) << log;
  EXPECT_EQ(log.find(kSecret), std::string::npos);
}

TEST(ModelEndpointFaults, ADeadEndpointFailsCallsAfterTheUnavailableWindow) {
  auto fake = std::make_unique<FakeEndpoint>();
  const std::string base = fake->base();
  TempDir tmp;
  Deployment d(vllm_args(tmp, *fake, "++model_endpoint_unavailable_seconds=1.5"), tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  fake.reset();  // every connection is refused from now on
  const auto start = Clock::now();
  auto a = post_json(d.port_of("policy_model"), "/v1/responses", R"({"input":"hi"})");
  EXPECT_LT(seconds_since(start), 10.0);
  EXPECT_EQ(a.status, 503) << text_of(a);
  EXPECT_EQ(text_of(a).rfind("model endpoint " + base + "/chat/completions is unavailable: ", 0),
            0u)
      << text_of(a);
  EXPECT_NE(text_of(a).find("refused"), std::string::npos) << text_of(a);
}

TEST(ModelEndpointFaults, AConnectionResetAfterTheRequestIsTriedThreeTimes) {
  FakeEndpoint fake;
  TempDir tmp;
  Deployment d(vllm_args(tmp, fake), tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  // The endpoint takes every request and drops the connection: it may have generated each time.
  fake.script(R"([{"reset":true,"times":10}])");
  auto a = post_json(d.port_of("policy_model"), "/v1/responses", R"({"input":"hi"})");
  EXPECT_EQ(a.status, 502) << text_of(a);
  EXPECT_EQ(
      text_of(a).rfind("model endpoint " + fake.base() + "/chat/completions gave no answer: ", 0),
      0u)
      << text_of(a);
  EXPECT_NE(text_of(a).find("closed after the whole request was sent"), std::string::npos)
      << text_of(a);
  EXPECT_EQ(fake.received().size(), 3u);
}

TEST(ModelEndpointFaults, RetryAfterIsHonouredWithinTheBudget) {
  FakeEndpoint fake;
  TempDir tmp;
  Deployment d(vllm_args(tmp, fake, "++global_http_retry_budget_seconds=4"), tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const int port = d.port_of("policy_model");
  fake.script(R"([{"status":429,"headers":{"Retry-After":"2"}}])");
  auto start = Clock::now();
  auto a = post_json(port, "/v1/responses", R"({"input":"hi"})");
  EXPECT_EQ(a.status, 200) << text_of(a);
  EXPECT_GE(seconds_since(start), 1.9) << "the retry came before the Retry-After";
  EXPECT_EQ(fake.received().size(), 2u);
  // A Retry-After beyond the budget ends the call at once, naming the answer.
  fake.script(R"([{"status":503,"headers":{"Retry-After":"60"},"times":10}])");
  start = Clock::now();
  a = post_json(port, "/v1/responses", R"({"input":"hi"})");
  EXPECT_LT(seconds_since(start), 1.5);
  EXPECT_EQ(a.status, 502) << text_of(a);
  EXPECT_EQ(text_of(a).rfind(
                "model endpoint " + fake.base() + "/chat/completions answered HTTP 503: ", 0),
            0u)
      << text_of(a);
  EXPECT_NE(text_of(a).find("retry budget exhausted"), std::string::npos) << text_of(a);
  EXPECT_EQ(fake.received().size(), 3u);
}

TEST(ModelEndpointFaults, RetriesAreLoggedAsOneSummaryAndHintsSayWhatHappened) {
  FakeEndpoint fake;
  TempDir tmp;
  Deployment d(vllm_args(tmp, fake, "++global_http_retry_budget_seconds=30"), tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const int port = d.port_of("policy_model");
  fake.script(R"([{"status":429,"times":8},{"status":503,"times":2}])");
  auto a = post_json(port, "/v1/responses", R"({"input":"hi"})");
  EXPECT_EQ(a.status, 200) << text_of(a);
  EXPECT_EQ(fake.received().size(), 11u);
  EXPECT_TRUE(d.wait_for_output("1 attempt was rate limited (429)")) << d.output();
  auto log = d.output();
  // Ten retries within 5 s: one summary line (the first retry), no line per retry.
  EXPECT_EQ(count_of(log, "model endpoint " + fake.base() + ": "), 1u) << log;
  EXPECT_NE(log.find("1 attempt was rate limited (429); retrying within "
                     "global_http_retry_budget_seconds=30 s"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("model_retry"), std::string::npos) << log;
  // A 500 is tried 3 times, and the hint says so (not that a budget ran out).
  fake.script(R"([{"status":500,"times":3}])");
  a = post_json(port, "/v1/responses", R"({"input":"hi"})");
  EXPECT_EQ(a.status, 502) << text_of(a);
  EXPECT_NE(text_of(a).find("answered HTTP 500"), std::string::npos) << text_of(a);
  EXPECT_NE(text_of(a).find("tried 3 times"), std::string::npos) << text_of(a);
  EXPECT_EQ(text_of(a).find("retry_budget"), std::string::npos) << text_of(a);
  // 429s until the budget ends: the answer and how long it was retried.
  TempDir tmp2;
  Deployment short_budget(vllm_args(tmp2, fake, "++global_http_retry_budget_seconds=1.5"),
                          tmp2.file("log"));
  ASSERT_TRUE(short_budget.ready()) << short_budget.output();
  fake.script(R"([{"status":429,"times":100}])");
  a = post_json(short_budget.port_of("policy_model"), "/v1/responses", R"({"input":"hi"})");
  EXPECT_EQ(a.status, 502) << text_of(a);
  EXPECT_EQ(text_of(a).rfind(
                "model endpoint " + fake.base() + "/chat/completions answered HTTP 429: ", 0),
            0u)
      << text_of(a);
  EXPECT_NE(text_of(a).find("retried for 1.5 s"), std::string::npos) << text_of(a);
  EXPECT_EQ(text_of(a).find("1.500000"), std::string::npos) << text_of(a);
}

TEST(ModelEndpointFaults, ModelTimeoutBoundsOneAttemptAndNamesTheSetting) {
  FakeEndpoint fake;
  TempDir tmp;
  Deployment d(vllm_args(tmp, fake, "--model-timeout 1"), tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  fake.script(R"([{"hang":true}])");
  const auto start = Clock::now();
  auto a = post_json(d.port_of("policy_model"), "/v1/responses", R"({"input":"hi"})");
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(a.status, 502) << text_of(a);
  EXPECT_EQ(text_of(a).rfind("model endpoint " + fake.base() +
                                 "/chat/completions gave no answer: no answer within "
                                 "model_call_timeout_seconds=1 s",
                             0),
            0u)
      << text_of(a);
  // Without it, the read timeout fires and is named the same way.
  TempDir tmp2;
  Deployment read(vllm_args(tmp2, fake, "++global_http_read_timeout_seconds=1"), tmp2.file("log"));
  ASSERT_TRUE(read.ready()) << read.output();
  fake.script(R"([{"hang":true}])");
  a = post_json(read.port_of("policy_model"), "/v1/responses", R"({"input":"hi"})");
  EXPECT_EQ(a.status, 502) << text_of(a);
  EXPECT_EQ(
      text_of(a).rfind("model endpoint " + fake.base() + "/chat/completions gave no answer: ", 0),
      0u)
      << text_of(a);
  EXPECT_NE(text_of(a).find("global_http_read_timeout_seconds=1 s"), std::string::npos)
      << text_of(a);
}

TEST(ModelEndpointFaults, ABadModelTimeoutIsAConfigError) {
  auto r = gym::test::run_command(gym_binary() +
                                  " config show --model-type vllm_model --model-url "
                                  "http://127.0.0.1:9/v1 --model m --model-timeout=-3 2>&1");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("model_call_timeout_seconds"), std::string::npos) << r.output;
  r = gym::test::run_command(
      gym_binary() +
      " config show --model-type vllm_model --model-url "
      "http://127.0.0.1:9/v1 --model m ++model_endpoint_unavailable_seconds=x "
      "2>&1");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("model_endpoint_unavailable_seconds"), std::string::npos) << r.output;
}

TEST(ModelEndpointFaults, AContextOverflowKeepsTheEndpointsMessageInTheRow) {
  FakeEndpoint fake;
  const std::string overflow =
      "This model's maximum context length is 4096 tokens. However, you requested 9000 tokens "
      "(1000 in the messages, 8000 in the completion).";
  fake.script(R"([{"status":400,"times":1000,"body":{"object":"error","message":")" + overflow +
              R"(","type":"BadRequestError","param":null,"code":400}}])");
  TempDir tmp;
  {
    Deployment d(vllm_args(tmp, fake), tmp.file("log"));
    ASSERT_TRUE(d.ready()) << d.output();
    auto a = post_json(d.port_of("policy_model"), "/v1/responses", R"({"input":"long"})");
    ASSERT_EQ(a.status, 200) << text_of(a);
    EXPECT_EQ(a.body.at("status"), "incomplete");
    EXPECT_EQ(a.body.at("incomplete_details").at("reason"), "max_output_tokens");
    EXPECT_EQ(a.body.at("error").at("code"), "context_length_exceeded");
    EXPECT_EQ(a.body.at("error").at("message"), overflow.c_str());
    // The chat route keeps upstream's shape: an empty completion cut off by length.
    a = post_json(d.port_of("policy_model"), "/v1/chat/completions",
                  R"({"messages":[{"role":"user","content":"long"}]})");
    ASSERT_EQ(a.status, 200) << text_of(a);
    EXPECT_EQ(a.body.at("choices").at(0).at("finish_reason"), "length");
    EXPECT_TRUE(d.wait_for_output("--max-output-tokens")) << d.output();
    const auto log = d.output();
    // Rate-limited: the two refusals within 10 s make one line.
    EXPECT_EQ(count_of(log, "as too long for the model's context"), 1u) << log;
    EXPECT_NE(log.find("vllm_model policy_model: the endpoint refused a call as too long for the "
                       "model's context: " +
                       overflow),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("--max-output-tokens"), std::string::npos) << log;
  }
  // Through the agent into the row.
  const auto input = write_file(tmp, "in.jsonl",
                                "{\"responses_create_params\":{\"input\":\"Weather in Oslo?\"}}\n");
  const auto out = tmp.file("out.jsonl");
  auto r = gym::test::run_command(
      gym_binary() +
      " eval run --resources-server example_single_tool_call --model-type vllm_model" +
      " --model-url " + fake.base() + " --model fake-model --model-api-key " + kSecret +
      " --agent example_single_tool_call_simple_agent --input " + input + " --output " + out +
      " ++head_server.port=0 2>&1");
  EXPECT_EQ(r.code, 0) << r.output;
  const auto rows = read_jsonl(out);
  ASSERT_EQ(rows.size(), 1u) << r.output;
  const auto& response = rows[0].at("response").as_object();
  EXPECT_EQ(response.at("error").at("code"), "context_length_exceeded") << json::serialize(rows[0]);
  EXPECT_EQ(response.at("error").at("message"), overflow.c_str());
  EXPECT_EQ(response.at("incomplete_details").at("reason"), "max_output_tokens");
}
