// Live model servers (issue 12; docs/reference/model-servers.md): vllm_model, openai_model and
// azure_openai_model started by the real `gym env start`, talking real HTTP to a fake
// OpenAI-compatible endpoint (tests/support/fake_openai.cpp) that records what it received and
// answers with tool calls, reasoning, token ids, length finishes, 429s, 500s and 401s. The live
// path reproduces NeMo Gym's recorded rewards: the fake answers every model turn of the
// conformance rollouts in Chat Completions form and `gym eval run --model-type vllm_model`
// must give back every recorded reward.
#include "conformance_dir.h"
#include "files.h"
#include "live_deployment.h"
#include "npm_package.h"
#include "process.h"
#include "temp_dir.h"
#include "test_pki.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <thread>

namespace fs = std::filesystem;
namespace json = boost::json;
using gym::test::Answer;
using gym::test::ChildProcess;
using gym::test::Deployment;
using gym::test::fake_token_ids;
using gym::test::FakeEndpoint;
using gym::test::post_json;
using gym::test::read_jsonl;
using gym::test::read_text;
using gym::test::TempDir;
using gym::test::write_file;

namespace {

constexpr const char* kSecret = "sk-live-test-5ecret-9f3a";

std::string gym_binary() { return gym::test::build_path("src/cli/gym"); }

std::string vllm_config(const std::string& base_url, const std::string& extra = "") {
  return "policy_model:\n  responses_api_models:\n    vllm_model:\n      base_url: " + base_url +
         "\n      api_key: " + kSecret +
         "\n      model: fake-model\n      return_token_id_information: false\n"
         "      uses_reasoning_parser: true\n" +
         extra;
}

const char* kWeatherRequest =
    R"({"input":[{"role":"user","content":"Weather in SF?"}],"tools":[{"type":"function",)"
    R"("name":"get_weather","description":"d","parameters":{"type":"object","properties":)"
    R"({"city":{"type":"string"}}},"strict":true}],"temperature":0.2,"max_output_tokens":50})";

}  // namespace

TEST(VllmModel, ConvertsToChatCompletionsAndBack) {
  FakeEndpoint fake;
  TempDir tmp;
  Deployment d("--config " + write_file(tmp, "m.yaml", vllm_config(fake.base())), tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const int port = d.port_of("policy_model");
  fake.script(R"([{"answer":{"id":"x","object":"chat.completion","created":1700000002,
    "model":"fake-model","choices":[{"index":0,"finish_reason":"tool_calls","message":{
    "role":"assistant","content":"Checking.","reasoning_content":"I need the tool.",
    "tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather",
    "arguments":"{\"city\":\"SF\"}"}}]}}],
    "usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29,
             "prompt_tokens_details":{"cached_tokens":4}}}}])");
  auto a = post_json(port, "/v1/responses", kWeatherRequest);
  ASSERT_EQ(a.status, 200) << json::serialize(a.body);
  const auto& r = a.body.as_object();
  EXPECT_EQ(r.at("object"), "response");
  EXPECT_EQ(r.at("model"), "fake-model");
  EXPECT_EQ(r.at("status"), "completed");
  const auto& out = r.at("output").as_array();
  ASSERT_EQ(out.size(), 3u) << json::serialize(out);
  EXPECT_EQ(out[0].at("type"), "reasoning");
  EXPECT_EQ(out[0].at("summary").at(0).at("text"), "I need the tool.");
  EXPECT_EQ(out[1].at("type"), "message");
  EXPECT_EQ(out[1].at("content").at(0).at("text"), "Checking.");
  EXPECT_EQ(out[2].at("type"), "function_call");
  EXPECT_EQ(out[2].at("call_id"), "call_1");
  EXPECT_EQ(out[2].at("arguments"), "{\"city\":\"SF\"}");
  EXPECT_EQ(r.at("usage").at("input_tokens").to_number<int>(), 20);
  EXPECT_EQ(r.at("usage").at("input_tokens_details").at("cached_tokens").to_number<int>(), 4);

  auto got = fake.received();
  ASSERT_EQ(got.size(), 1u);
  const auto& sent = got[0].as_object();
  EXPECT_EQ(sent.at("path").as_string(), "/v1/chat/completions");
  EXPECT_EQ(sent.at("headers").at("authorization").as_string(), std::string("Bearer ") + kSecret);
  const auto& body = sent.at("body").as_object();
  EXPECT_EQ(body.at("model"), "fake-model");
  EXPECT_EQ(body.at("max_tokens").to_number<int>(), 50);
  EXPECT_EQ(body.at("temperature").to_number<double>(), 0.2);
  EXPECT_EQ(body.at("messages").at(0).at("role"), "user");
  EXPECT_EQ(body.at("tools").at(0).at("function").at("name"), "get_weather");
  EXPECT_FALSE(body.at("tools").at(0).at("function").as_object().contains("strict"));

  // The next turn sends the reasoning back as reasoning_content, the call as tool_calls.
  fake.script(R"([{"content":"Sunny."}])");
  json::object turn2 = json::parse(kWeatherRequest).as_object();
  auto& input = turn2.at("input").as_array();
  for (const auto& item : out) input.push_back(item);
  input.push_back(json::object{{"type", "function_call_output"},
                               {"call_id", "call_1"},
                               {"output", "{\"weather\":\"sunny\"}"}});
  a = post_json(port, "/v1/responses", json::serialize(turn2), a.cookie);
  ASSERT_EQ(a.status, 200) << json::serialize(a.body);
  EXPECT_EQ(a.body.at("output").at(0).at("content").at(0).at("text"), "Sunny.");
  const auto messages = fake.received().at(1).at("body").at("messages").as_array();
  ASSERT_EQ(messages.size(), 3u) << json::serialize(messages);
  EXPECT_EQ(messages[1].at("role"), "assistant");
  EXPECT_EQ(messages[1].at("content"), "Checking.");
  EXPECT_EQ(messages[1].at("reasoning_content"), "I need the tool.");
  EXPECT_EQ(messages[1].at("tool_calls").at(0).at("id"), "call_1");
  EXPECT_EQ(messages[2].at("role"), "tool");
  EXPECT_EQ(messages[2].at("tool_call_id"), "call_1");

  // /v1/chat/completions is forwarded with the configured model.
  a = post_json(port, "/v1/chat/completions",
                R"({"model":"whatever","messages":[{"role":"user","content":"hi"}]})");
  ASSERT_EQ(a.status, 200) << json::serialize(a.body);
  EXPECT_EQ(a.body.at("choices").at(0).at("message").at("content"), "Hello");
  EXPECT_EQ(fake.received().at(2).at("body").at("model"), "fake-model");
}

TEST(VllmModel, LengthFinishesAndContextOverflowsAreIncomplete) {
  FakeEndpoint fake;
  TempDir tmp;
  Deployment d("--config " + write_file(tmp, "m.yaml", vllm_config(fake.base())), tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const int port = d.port_of("policy_model");
  fake.script(R"([{"answer":{"id":"x","object":"chat.completion","created":1,"model":"m",
    "choices":[{"index":0,"finish_reason":"length","message":{"role":"assistant","content":"par"}}]}},
    {"status":400,"body":{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 40000 tokens","code":400}}])");
  auto a = post_json(port, "/v1/responses", R"({"input":"write a lot"})");
  ASSERT_EQ(a.status, 200) << json::serialize(a.body);
  EXPECT_EQ(a.body.at("status"), "incomplete");
  EXPECT_EQ(a.body.at("incomplete_details").at("reason"), "max_output_tokens");
  a = post_json(port, "/v1/responses", R"({"input":"too long"})");
  ASSERT_EQ(a.status, 200) << json::serialize(a.body);
  EXPECT_EQ(a.body.at("status"), "incomplete");
  EXPECT_EQ(a.body.at("output").at(0).at("content").at(0).at("text"), "");
}

TEST(VllmModel, TokenIdsForTraining) {
  FakeEndpoint fake;
  TempDir tmp;
  Deployment d(
      "--config " +
          write_file(
              tmp, "m.yaml",
              vllm_config(fake.base()) + "      request_prompt_and_generation_token_ids: false\n") +
          " ++policy_model.responses_api_models.vllm_model.return_token_id_information=true",
      tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const int port = d.port_of("policy_model");
  auto a = post_json(port, "/v1/responses", R"({"input":"hi"})");
  ASSERT_EQ(a.status, 200) << json::serialize(a.body);
  const auto& item = a.body.at("output").as_array().back().as_object();
  // The fake's tokenisation: the prompt from /tokenize, the answer "Hello" from the logprobs.
  EXPECT_EQ(item.at("prompt_token_ids"), fake_token_ids("<S>user\nhi<E>\n<S>assistant\n"));
  EXPECT_EQ(item.at("generation_token_ids"), fake_token_ids("Hello<E>"));
  const auto& logprobs = item.at("generation_log_probs").as_array();
  ASSERT_EQ(logprobs.size(), 6u);
  EXPECT_EQ(logprobs[0].to_number<double>(), -(1 + 'H' % 16) / 16.0);
  auto got = fake.received();
  ASSERT_EQ(got.size(), 2u);
  const auto& chat = got[0].at("body").as_object();
  EXPECT_EQ(chat.at("logprobs"), true);
  EXPECT_EQ(chat.at("top_logprobs").to_number<int>(), 0);
  EXPECT_EQ(chat.at("return_tokens_as_token_ids"), true);
  EXPECT_EQ(got[1].at("path"), "/tokenize");
  EXPECT_EQ(got[1].at("body").at("model"), "fake-model");

  // The ids of the answer go back to the engine on the next turn.
  json::object turn2{{"input", json::array{json::object{{"role", "user"}, {"content", "hi"}}}}};
  for (const auto& o : a.body.at("output").as_array()) turn2["input"].as_array().push_back(o);
  turn2["input"].as_array().push_back(json::object{{"role", "user"}, {"content", "more"}});
  a = post_json(port, "/v1/responses", json::serialize(turn2), a.cookie);
  ASSERT_EQ(a.status, 200) << json::serialize(a.body);
  const auto assistant = fake.received().at(2).at("body").at("messages").at(1).as_object();
  EXPECT_EQ(assistant.at("generation_token_ids"), fake_token_ids("Hello<E>"));
}

TEST(VllmModel, SessionsStickToOneBaseUrlAndSpreadOverAll) {
  FakeEndpoint a_fake, b_fake;
  TempDir tmp;
  Deployment d(
      "--config " +
          write_file(tmp, "m.yaml", vllm_config("[" + a_fake.base() + ", " + b_fake.base() + "]")),
      tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const int port = d.port_of("policy_model");
  for (int session = 0; session < 16; ++session) {
    auto first = post_json(port, "/v1/responses", R"({"input":"hi"})");
    ASSERT_EQ(first.status, 200);
    const auto before_a = a_fake.received().size();
    for (int turn = 0; turn < 3; ++turn)
      ASSERT_EQ(post_json(port, "/v1/responses", R"({"input":"again"})", first.cookie).status, 200);
    const auto after_a = a_fake.received().size();
    EXPECT_TRUE(after_a == before_a || after_a == before_a + 3)
        << "the turns of one session went to both endpoints";
  }
  EXPECT_GT(a_fake.received().size(), 0u);
  EXPECT_GT(b_fake.received().size(), 0u);
}

TEST(VllmModel, RetriesRateLimitsAndNamesWhatFailed) {
  FakeEndpoint fake;
  TempDir tmp;
  Deployment d("--config " + write_file(tmp, "m.yaml", vllm_config(fake.base())) +
                   " ++global_http_retry_budget_seconds=3",
               tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const int port = d.port_of("policy_model");
  fake.script(R"([{"status":429,"times":2},{"status":502}])");
  auto a = post_json(port, "/v1/responses", R"({"input":"hi"})");
  EXPECT_EQ(a.status, 200) << json::serialize(a.body);
  EXPECT_EQ(fake.received().size(), 4u);

  fake.script(R"([{"status":401,"body":{"error":{"message":"Incorrect API key provided"}}}])");
  a = post_json(port, "/v1/responses", R"({"input":"hi"})");
  EXPECT_EQ(a.status, 401);
  ASSERT_TRUE(a.body.is_string());
  const std::string text(a.body.as_string());
  EXPECT_NE(text.find(fake.base() + "/chat/completions"), std::string::npos) << text;
  EXPECT_NE(text.find("HTTP 401"), std::string::npos) << text;
  EXPECT_NE(text.find("policy_api_key"), std::string::npos) << text;
  EXPECT_EQ(fake.received().size(), 5u) << "a 401 is not retried";

  fake.script(R"([{"status":404,"times":1}])");
  a = post_json(port, "/v1/responses", R"({"input":"hi"})");
  EXPECT_EQ(a.status, 404);
  EXPECT_NE(json::serialize(a.body).find("policy_model_name"), std::string::npos);

  fake.script(R"([{"status":500,"times":3}])");
  a = post_json(port, "/v1/responses", R"({"input":"hi"})");
  EXPECT_EQ(a.status, 502);
  EXPECT_NE(json::serialize(a.body).find("HTTP 500"), std::string::npos);
  EXPECT_EQ(fake.received().size(), 9u) << "500 is tried 3 times";

  fake.script(R"([{"status":503,"times":100}])");
  a = post_json(port, "/v1/responses", R"({"input":"hi"})");
  EXPECT_EQ(a.status, 502);
  EXPECT_NE(json::serialize(a.body).find("retry budget exhausted"), std::string::npos)
      << json::serialize(a.body);
  EXPECT_EQ(d.output().find(kSecret), std::string::npos) << "the key leaked into the log";
}

TEST(OpenAIModel, ForwardsResponsesAndChatWithTheConfiguredModel) {
  FakeEndpoint fake({"--served-model", "gpt-test"});  // what start-up's preflight looks for
  TempDir tmp;
  Deployment d(
      "--config " + write_file(tmp, "m.yaml",
                               "policy_model:\n  responses_api_models:\n    openai_model:\n"
                               "      openai_base_url: " +
                                   fake.base() + "\n      openai_api_key: " + kSecret +
                                   "\n      openai_model: gpt-test\n"
                                   "      openai_default_headers: {X-Team: rl}\n"
                                   "      extra_body: {store: false}\n"
                                   "      drop_input_reasoning_items: true\n"),
      tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const int port = d.port_of("policy_model");
  auto a = post_json(
      port, "/v1/responses",
      R"({"input":[{"role":"user","content":"hi"},{"type":"reasoning","id":"rs_1","summary":[]},
                        {"role":"user","content":"again"}],"model":"ignored"})");
  ASSERT_EQ(a.status, 200) << json::serialize(a.body);
  EXPECT_EQ(a.body.at("output").at(0).at("content").at(0).at("text"), "Hello");
  auto sent = fake.received().at(0).as_object();
  EXPECT_EQ(sent.at("path"), "/v1/responses");
  EXPECT_EQ(sent.at("headers").at("authorization").as_string(), std::string("Bearer ") + kSecret);
  EXPECT_EQ(sent.at("headers").at("x-team"), "rl");
  EXPECT_EQ(sent.at("body").at("model"), "gpt-test");
  EXPECT_EQ(sent.at("body").at("store"), false);
  EXPECT_EQ(sent.at("body").at("input").as_array().size(), 2u) << "reasoning items dropped";
  a = post_json(port, "/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}]})");
  ASSERT_EQ(a.status, 200) << json::serialize(a.body);
  EXPECT_EQ(fake.received().at(1).at("path"), "/v1/chat/completions");
  EXPECT_EQ(fake.received().at(1).at("body").at("model"), "gpt-test");
}

TEST(AzureOpenAIModel, UsesAzureUrlsApiVersionAndApiKeyHeader) {
  FakeEndpoint fake;
  TempDir tmp;
  const std::string endpoint = "http://127.0.0.1:" + std::to_string(fake.port);
  Deployment d("--model-type azure_openai_model --model-url " + endpoint + " --model my-deploy" +
                   " --model-api-key " + kSecret +
                   " ++policy_model.responses_api_models.azure_openai_model.default_query.api-"
                   "version=2024-10-21",
               tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const int port = d.port_of("policy_model");
  auto a = post_json(port, "/v1/responses", kWeatherRequest);
  ASSERT_EQ(a.status, 200) << json::serialize(a.body);
  EXPECT_EQ(a.body.at("model"), "my-deploy");
  auto sent = fake.received().at(0).as_object();
  EXPECT_EQ(sent.at("path"), "/openai/deployments/my-deploy/chat/completions");
  EXPECT_EQ(sent.at("query"), "api-version=2024-10-21");
  EXPECT_EQ(sent.at("headers").at("api-key"), kSecret);
  EXPECT_FALSE(sent.at("headers").as_object().contains("authorization"));
  EXPECT_EQ(sent.at("body").at("model"), "my-deploy");
}

TEST(LiveModelConfig, MissingApiVersionAndUnsupportedKeysAreStartupErrors) {
  TempDir tmp;
  auto r = gym::test::run_command(gym_binary() +
                                  " env start --model-type azure_openai_model --model-url "
                                  "http://127.0.0.1:9 --model d --model-api-key k 2>&1");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("api-version"), std::string::npos) << r.output;
  Deployment d(
      "--config " +
          write_file(tmp, "m.yaml",
                     vllm_config("http://127.0.0.1:9/v1") + "      use_completions_api: true\n") +
          " ++model_endpoint_readiness_timeout_seconds=0",
      tmp.file("log"));
  EXPECT_FALSE(d.ready());
  EXPECT_NE(d.output().find("vllm_model.use_completions_api is not supported"), std::string::npos)
      << d.output();
}

TEST(LiveModelFlags, ModelFlagsThatDoNotApplyAreErrors) {
  auto r = gym::test::run_command(gym_binary() +
                                  " env start --resources-server mcqa --model-type replay_model "
                                  "--model-url http://127.0.0.1:9/v1 2>&1");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--model-url"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("vllm_model"), std::string::npos) << r.output;
}

TEST(LiveModelSecrets, TheKeyIsMaskedInConfigShowStatusAndTheHeadServer) {
  FakeEndpoint fake({"--served-model", "m"});
  TempDir tmp;
  auto show = gym::test::run_command(gym_binary() + " config show --model-type vllm_model" +
                                     " --model-url " + fake.base() + " --model m --model-api-key " +
                                     kSecret + " ++hf_token=hf_abcdef123456 2>&1");
  EXPECT_EQ(show.code, 0) << show.output;
  EXPECT_EQ(show.output.find(kSecret), std::string::npos) << show.output;
  EXPECT_EQ(show.output.find("hf_abcdef123456"), std::string::npos) << show.output;
  EXPECT_NE(show.output.find("api_key: \"****\""), std::string::npos) << show.output;

  Deployment d("--model-type vllm_model --model-url " + fake.base() +
                   " --model m --model-api-key " + kSecret,
               tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const auto yaml = d.head_get("/global_config_dict_yaml");
  EXPECT_EQ(yaml.find(kSecret), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("***"), std::string::npos) << yaml;
  auto status = gym::test::run_command(gym_binary() + " env status --json ++head_server.port=" +
                                       std::to_string(d.head_port()) + " 2>&1");
  EXPECT_EQ(status.output.find(kSecret), std::string::npos) << status.output;
  // The model server itself still has the key.
  ASSERT_EQ(post_json(d.port_of("policy_model"), "/v1/responses", R"({"input":"hi"})").status, 200);
  EXPECT_EQ(fake.received().at(0).at("headers").at("authorization").as_string(),
            std::string("Bearer ") + kSecret);
  EXPECT_EQ(d.output().find(kSecret), std::string::npos) << d.output();
}

namespace {

std::string node_path() {
  std::string why;
  auto node = gym::test::node_binary(&why);
  EXPECT_FALSE(node.empty()) << why;
  return node;
}

// The fake endpoint behind an https front (Node's TLS server) with a certificate of the test PKI.
struct HttpsFake {
  FakeEndpoint fake;
  std::unique_ptr<ChildProcess> front;
  int port = 0;
  HttpsFake(const std::string& key, const std::string& cert) {
    front = std::make_unique<ChildProcess>(std::vector<std::string>{
        node_path(),
        std::string(GYM_SOURCE_ROOT) + "/tests/integration/openai_client/https_proxy.js", key, cert,
        std::to_string(fake.port)});
    port = front->wait_port();
  }
  std::string base() const { return "https://localhost:" + std::to_string(port) + "/v1"; }
};

}  // namespace

TEST(VllmModelHttps, TalksTlsToTheEndpointAndRefusesAnUntrustedCertificate) {
  const auto& pki = gym::test::test_pki("live_model_tls");
  ASSERT_TRUE(pki.error.empty()) << pki.error;
  HttpsFake https(pki.key, pki.cert);
  ASSERT_GT(https.port, 0);
  TempDir tmp;
  {
    Deployment d("--config " + write_file(tmp, "m.yaml", vllm_config(https.base())),
                 tmp.file("log"), "SSL_CERT_FILE=" + pki.ca);
    ASSERT_TRUE(d.ready()) << d.output();
    auto a = post_json(d.port_of("policy_model"), "/v1/responses", R"({"input":"hi"})");
    ASSERT_EQ(a.status, 200) << json::serialize(a.body);
    EXPECT_EQ(a.body.at("output").at(0).at("content").at(0).at("text"), "Hello");
    EXPECT_EQ(https.fake.received().size(), 1u);  // the probe's GET /v1/models is not recorded
  }
  // A store that does not trust the certificate: the readiness probe says why and stops.
  Deployment d("--config " + write_file(tmp, "m2.yaml", vllm_config(https.base())),
               tmp.file("log2"), "SSL_CERT_FILE=" + pki.other_ca);
  EXPECT_FALSE(d.ready());
  EXPECT_EQ(d.proc().wait_exit(), 2);
  EXPECT_NE(
      d.output().find("TLS handshake with localhost:" + std::to_string(https.port) + " failed"),
      std::string::npos)
      << d.output();
}

TEST(OpenAIClient, TheOfficialClientParsesOurResponsesAndChatCompletionsWithTokenIds) {
  std::string why;
  const auto node = gym::test::node_binary(&why);
  ASSERT_FALSE(node.empty()) << why;
  const auto modules =
      gym::test::npm_install({"openai_node", "openai@6", "openai/package.json"}, &why);
  ASSERT_FALSE(modules.empty()) << why;
  FakeEndpoint fake;
  TempDir tmp;
  Deployment d(
      "--config " + write_file(tmp, "m.yaml", vllm_config(fake.base())) +
          " ++policy_model.responses_api_models.vllm_model.return_token_id_information=true",
      tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const std::string base = "http://127.0.0.1:" + std::to_string(d.port_of("policy_model")) + "/v1";
  auto r = gym::test::run_command("'" + node + "' '" + std::string(GYM_SOURCE_ROOT) +
                                  "/tests/integration/openai_client/client.js' '" + modules + "' " +
                                  base + " both");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto newline = r.output.find('\n');
  ASSERT_NE(newline, std::string::npos) << r.output;
  auto responses = json::parse(r.output.substr(0, newline)).as_object();
  auto chat = json::parse(r.output.substr(newline + 1)).as_object();
  EXPECT_EQ(responses.at("ok"), true) << r.output;
  EXPECT_EQ(responses.at("status"), "completed");
  EXPECT_EQ(responses.at("output_text"), "Hello");
  const auto& last = responses.at("output").as_array().back().as_object();
  EXPECT_EQ(last.at("generation_token_ids"), fake_token_ids("Hello<E>")) << r.output;
  EXPECT_EQ(last.at("prompt_token_ids"),
            fake_token_ids("<S>system\n# Tools\nget_weather<E>\n"
                           "<S>user\nWhat is the weather in Paris?<E>\n<S>assistant\n"));
  EXPECT_EQ(chat.at("ok"), true) << r.output;
  EXPECT_EQ(chat.at("content"), "Hello");
  const auto& message = chat.at("choices").at(0).at("message").as_object();
  EXPECT_EQ(message.at("generation_token_ids"), fake_token_ids("Hello<E>")) << r.output;
  EXPECT_EQ(message.at("generation_log_probs").as_array().size(), 6u);
}

TEST(LiveModelCollection, AFailingEndpointBecomesFailureRowsNamingItsUrlAndStatus) {
  FakeEndpoint fake;
  fake.script(R"([{"status":401,"times":1000,"body":{"error":{"message":"Incorrect API key"}}}])");
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl",
                                "{\"responses_create_params\":{\"input\":\"Weather in Oslo?\"}}\n"
                                "{\"responses_create_params\":{\"input\":\"Weather in Rome?\"}}\n");
  const auto out = tmp.file("out.jsonl");
  auto r = gym::test::run_command(
      gym_binary() +
      " eval run --resources-server example_single_tool_call --model-type vllm_model" +
      " --model-url " + fake.base() + " --model fake-model --model-api-key " + kSecret +
      " --agent example_single_tool_call_simple_agent --input " + input + " --output " + out +
      " ++head_server.port=0 2>&1");
  EXPECT_EQ(r.code, 3) << r.output;
  const auto failures = read_jsonl(tmp.file("out_failures.jsonl"));
  ASSERT_EQ(failures.size(), 2u) << r.output;
  for (const auto& row : failures) {
    const auto text = json::serialize(row);
    EXPECT_NE(text.find(fake.base() + "/chat/completions"), std::string::npos) << text;
    EXPECT_NE(text.find("HTTP 401"), std::string::npos) << text;
    EXPECT_EQ(text.find(kSecret), std::string::npos) << text;
  }
  EXPECT_EQ(r.output.find(kSecret), std::string::npos) << r.output;
}

TEST(LiveDemo, TheDemoRunsItsTasksAgainstAnEndpointGivenByModelUrl) {
  FakeEndpoint fake;
  TempDir tmp;
  auto r =
      gym::test::run_command(gym_binary() + " demo --output-dir " + tmp.file("demo") +
                             " --tasks-per-env 2 --num-repeats 1 --concurrency 4 --model-url " +
                             fake.base() + " --model fake-model ++head_server.port=0 2>&1");
  EXPECT_EQ(r.code, 0) << r.output;
  const auto rows = read_jsonl(tmp.file("demo/rollouts/demo.jsonl"));
  EXPECT_EQ(rows.size(), 6u) << r.output;  // 3 environments x 2 tasks, answered by the endpoint
  const auto got = fake.received();
  ASSERT_GE(got.size(), 6u);
  EXPECT_EQ(got[0].at("path").as_string(), "/v1/chat/completions");
  EXPECT_EQ(got[0].at("body").at("model").as_string(), "fake-model");
  EXPECT_EQ(got[0].at("headers").at("authorization").as_string(), "Bearer EMPTY");
}
