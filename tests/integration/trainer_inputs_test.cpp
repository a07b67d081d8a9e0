// What RL trainers pass to gym-cpp, end to end through the real `gym` binary and the fake
// OpenAI-compatible endpoint (tests/support/fake_openai.cpp, whose fixed tokenisation makes token
// ids predictable): NeMo Gym's preset paths from any directory, the env file and initial config
// flags, policy_base_url as a list, the vllm_model_for_training preset and routed_experts, the
// policy_api_key default, token_id_capture, and vllm_model's on-policy check with its metric.
#include "files.h"
#include "live_deployment.h"
#include "process.h"
#include "temp_dir.h"
#include "text_search.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <fstream>
#include <optional>
#include <string>

namespace {

namespace json = boost::json;
using gym::test::Deployment;
using gym::test::fake_token_ids;
using gym::test::FakeEndpoint;
using gym::test::post_json;
using gym::test::read_text;
using gym::test::TempDir;
using gym::test::write_file;

constexpr const char* kBreaks = "gym.model.token_contiguity.breaks";
constexpr const char* kVllm = "policy_model.responses_api_models.vllm_model";

std::string gym_binary() { return gym::test::build_path("src/cli/gym"); }

// `gym <args>` run in `cwd`, stderr with stdout.
gym::test::CommandResult gym_in(const std::string& cwd, const std::string& args) {
  return gym::test::run_command("cd '" + cwd + "' && " + gym_binary() + " " + args + " 2>&1");
}

using gym::test::count_of;

// vllm_model with token ids, its key from the preset's default.
std::string training_config(const std::string& base_url, const std::string& extra = "") {
  return std::string("policy_model:\n  responses_api_models:\n    vllm_model:\n") +
         "      base_url: " + base_url +
         "\n      model: fake-model\n      return_token_id_information: true\n" + extra;
}

const char* kTools =
    R"([{"type":"function","name":"get_weather","description":"d","parameters":{"type":"object",)"
    R"("properties":{"city":{"type":"string"}}},"strict":true}])";

// A chat.completion the fake answers with (its token information is added by the fake).
std::string scripted_answer(const std::string& message) {
  return R"({"answer":{"id":"x","object":"chat.completion","created":1,"model":"fake-model",)"
         R"("choices":[{"index":0,"finish_reason":"stop","message":)" +
         message + "}]}}";
}

const std::string kToolCall =
    R"({"role":"assistant","content":"Checking.","tool_calls":[{"id":"call_1","type":"function",)"
    R"("function":{"name":"get_weather","arguments":"{\"city\":\"SF\"}"}}]})";
const std::string kReasoned =
    R"({"role":"assistant","content":"Because.","reasoning_content":"Let me think."})";

// The next turn's input: `input` with the answer's output items and `more` items appended.
json::object next_turn(json::object request, const json::value& answer, json::array more) {
  auto& input = request.at("input").as_array();
  for (const auto& item : answer.at("output").as_array()) input.push_back(item);
  for (auto& item : more) input.push_back(std::move(item));
  return request;
}

// Three turns with a tool call and no reasoning (session A): the statuses of the turns.
std::vector<int> tool_conversation(FakeEndpoint& fake, int port) {
  fake.script("[" + scripted_answer(kToolCall) + R"(,{"content":"Sunny."}])");
  json::object request = json::parse(R"({"input":[{"role":"user","content":"Weather in SF?"}],
      "tools":)" + std::string(kTools) +
                                     "}")
                             .as_object();
  std::vector<int> statuses;
  auto a = post_json(port, "/v1/responses", json::serialize(request));
  statuses.push_back(a.status);
  if (a.status != 200) return statuses;
  const auto cookie = a.cookie;
  request = next_turn(request, a.body,
                      {json::object{{"type", "function_call_output"},
                                    {"call_id", "call_1"},
                                    {"output", R"({"weather":"sunny"})"}}});
  a = post_json(port, "/v1/responses", json::serialize(request), cookie);
  statuses.push_back(a.status);
  if (a.status != 200) return statuses;
  request = next_turn(request, a.body, {json::object{{"role", "user"}, {"content", "Thanks"}}});
  statuses.push_back(post_json(port, "/v1/responses", json::serialize(request), cookie).status);
  return statuses;
}

// Two turns where the model reasons and the history drops its reasoning (session B): the second
// turn's answer.
gym::test::Answer reasoning_conversation(FakeEndpoint& fake, int port) {
  fake.script("[" + scripted_answer(kReasoned) + "]");
  json::object request = json::parse(R"({"input":[{"role":"user","content":"Why?"}]})").as_object();
  auto a = post_json(port, "/v1/responses", json::serialize(request));
  EXPECT_EQ(a.status, 200) << json::serialize(a.body);
  request = next_turn(request, a.body, {json::object{{"role", "user"}, {"content", "And?"}}});
  return post_json(port, "/v1/responses", json::serialize(request), a.cookie);
}

// Where session B's second prompt stops following the first turn: right after the first prompt,
// where the generated "<think>" was but the history has "Because.".
std::size_t reasoning_break_index() {
  return fake_token_ids("<S>user\nWhy?<E>\n<S>assistant\n").size();
}

// The last value of the counter `name` among the console exporter's lines in `file`.
std::optional<std::int64_t> last_counter(const std::string& file, const std::string& name) {
  std::optional<std::int64_t> value;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    boost::system::error_code ec;
    auto v = json::parse(line, ec);
    if (ec || !v.is_object() || !v.as_object().contains("resourceMetrics")) continue;
    for (const auto& rm : v.at("resourceMetrics").as_array())
      for (const auto& sm : rm.at("scopeMetrics").as_array())
        for (const auto& m : sm.at("metrics").as_array()) {
          if (m.at("name") != name.c_str()) continue;
          std::int64_t total = 0;
          for (const auto& p : m.at("sum").at("dataPoints").as_array()) {
            const auto& n = p.at("asInt");
            total += n.is_string() ? std::stoll(std::string(n.as_string())) : n.to_number<int>();
          }
          value = total;
        }
  }
  return value;
}

}  // namespace

// ---- the fake endpoint's tokenisation, which the tests below and the Python tests rely on ----

TEST(FakeTokenisation, PromptsGenerationsAndTokenizeAgree) {
  FakeEndpoint fake;
  const std::string request =
      R"({"model":"m","messages":[{"role":"user","content":"hi"},)"
      R"({"role":"assistant","content":"ok","reasoning_content":"hidden","tool_calls":[{"id":"c",)"
      R"("type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},)"
      R"({"role":"tool","content":"r","tool_call_id":"c"}],)"
      R"("tools":[{"type":"function","function":{"name":"f"}}],)";
  const auto prompt = fake_token_ids(
      "<S>system\n# Tools\nf<E>\n<S>user\nhi<E>\n"
      "<S>assistant\nok<tool_call>{\"name\":\"f\",\"arguments\":{\"a\":1}}</tool_call><E>\n"
      "<S>tool\nr<E>\n<S>assistant\n");
  auto tokenized = post_json(fake.port, "/tokenize", request + R"("add_generation_prompt":true})");
  ASSERT_EQ(tokenized.status, 200);
  EXPECT_EQ(tokenized.body.at("tokens"), json::value(prompt)) << "history reasoning not rendered";
  EXPECT_EQ(tokenized.body.at("count").to_number<std::size_t>(), prompt.size());
  EXPECT_EQ(tokenized.body.at("max_model_len").to_number<int>(), 4096);

  fake.script("[" + scripted_answer(kReasoned) + "]");
  auto a = post_json(fake.port, "/v1/chat/completions",
                     request + R"("return_tokens_as_token_ids":true,"return_token_ids":true})");
  ASSERT_EQ(a.status, 200);
  EXPECT_EQ(a.body.at("prompt_token_ids"), json::value(prompt));
  const auto& choice = a.body.at("choices").at(0);
  const auto generated = fake_token_ids("<think>Let me think.</think>Because.<E>");
  EXPECT_EQ(choice.at("token_ids"), json::value(generated));
  const auto& logprobs = choice.at("logprobs").at("content").as_array();
  ASSERT_EQ(logprobs.size(), generated.size());
  EXPECT_EQ(logprobs[0].at("token"), "token_id:60");  // '<'
  EXPECT_EQ(logprobs[0].at("logprob").to_number<double>(), -(1 + 60 % 16) / 16.0);
  EXPECT_EQ(logprobs.back().at("token"), "token_id:151645");

  // Without return_token_ids only the logprobs; without either, nothing.
  a = post_json(
      fake.port, "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"hi"}],"return_tokens_as_token_ids":true})");
  EXPECT_FALSE(a.body.as_object().contains("prompt_token_ids"));
  EXPECT_EQ(a.body.at("choices").at(0).at("logprobs").at("content").as_array().size(),
            fake_token_ids("Hello<E>").size());
  a = post_json(fake.port, "/v1/chat/completions", R"({"messages":[]})");
  EXPECT_FALSE(a.body.at("choices").at(0).as_object().contains("logprobs"));
  auto models = gym::test::body_of(
      gym::test::http_raw(fake.port, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(json::parse(models).at("data").at(0).at("max_model_len").to_number<int>(), 4096);
}

// ---- vllm_model for training ----

TEST(VllmForTraining, RoutedExpertsTravelWithTheTokenIds) {
  FakeEndpoint fake({"--routed-experts"});
  TempDir tmp;
  Deployment d("--config " + write_file(tmp, "m.yaml", training_config(fake.base())),
               tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const int port = d.port_of("policy_model");
  auto a = post_json(port, "/v1/responses", R"({"input":"hi"})");
  ASSERT_EQ(a.status, 200) << json::serialize(a.body);
  const auto& item = a.body.at("output").as_array().back().as_object();
  EXPECT_EQ(item.at("routed_experts"), "fake-routed-experts:6") << json::serialize(item);
  EXPECT_EQ(item.at("prompt_token_ids"), fake_token_ids("<S>user\nhi<E>\n<S>assistant\n"));
  EXPECT_EQ(item.at("generation_token_ids"), fake_token_ids("Hello<E>"));
  EXPECT_EQ(item.at("generation_log_probs").as_array().size(), 6u);
  // No key configured: vllm_model sends "EMPTY".
  EXPECT_EQ(fake.received().at(0).at("headers").at("authorization"), "Bearer EMPTY");
}

TEST(VllmForTraining, NeMoGymPresetPathsWorkFromAnyDirectory) {
  FakeEndpoint fake;
  TempDir cwd;  // holds no responses_api_models/ folder
  const std::string preset = "responses_api_models/vllm_model/configs/vllm_model_for_training.yaml";
  auto show =
      gym_in(cwd.path(), "config show --config " + preset + " ++policy_base_url=" + fake.base() +
                             " ++policy_model_name=fake-model");
  ASSERT_EQ(show.code, 0) << show.output;
  EXPECT_NE(show.output.find("return_token_id_information: true"), std::string::npos)
      << show.output;
  EXPECT_NE(show.output.find("request_prompt_and_generation_token_ids: false"), std::string::npos);
  EXPECT_NE(show.output.find("config_paths:\n  - " + preset), std::string::npos) << show.output;

  // The same as a selector, started: token ids come back, with no key configured.
  Deployment d("--model-type vllm_model/vllm_model_for_training --model-url " + fake.base() +
                   " --model fake-model",
               cwd.file("log"), "", cwd.path());
  ASSERT_TRUE(d.ready()) << d.output();
  auto a = post_json(d.port_of("policy_model"), "/v1/responses", R"({"input":"hi"})");
  ASSERT_EQ(a.status, 200) << json::serialize(a.body);
  EXPECT_EQ(a.body.at("output").as_array().back().at("generation_token_ids"),
            fake_token_ids("Hello<E>"));

  // A path that is no preset is the usual error listing where it looked.
  auto missing = gym_in(cwd.path(),
                        "config show --config "
                        "responses_api_models/vllm_model/configs/nope.yaml");
  EXPECT_EQ(missing.code, 1) << missing.output;
  EXPECT_NE(missing.output.find("config file 'responses_api_models/vllm_model/configs/nope.yaml' "
                                "was not found. Looked in:"),
            std::string::npos)
      << missing.output;
  EXPECT_NE(missing.output.find(cwd.path()), std::string::npos) << missing.output;
}

TEST(VllmForTraining, PolicyBaseUrlListIsProbedAtStart) {
  FakeEndpoint a_fake, b_fake;
  TempDir tmp;
  Deployment d("--model-type vllm_model --model fake-model '++policy_base_url=[\"" + a_fake.base() +
                   "\",\"" + b_fake.base() + "\"]'",
               tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  EXPECT_GE(a_fake.state().at("models_probed").to_number<int>(), 1);
  EXPECT_GE(b_fake.state().at("models_probed").to_number<int>(), 1);
  // How sessions spread over the list: live_model_test (VllmModel) and tests/python.
}

TEST(VllmForTraining, TokenIdCaptureIsAStartupErrorSayingHowIdsReachRows) {
  TempDir tmp;
  auto r = gym_in(tmp.path(),
                  "env start --model-type vllm_model --model-url "
                  "http://127.0.0.1:9/v1 --model m ++token_id_capture.enabled=true "
                  "++head_server.port=0");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("'token_id_capture.enabled' is set: gym-cpp does not implement"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("return_token_id_information"), std::string::npos) << r.output;
  auto off = gym_in(tmp.path(),
                    "config show --model-type vllm_model --model-url "
                    "http://127.0.0.1:9/v1 --model m ++token_id_capture.enabled=false");
  EXPECT_EQ(off.code, 0) << off.output;
}

// ---- the on-policy check ----

TEST(OnPolicyCheck, ToolCallsPassAndDroppedReasoningIsCountedUnderWarn) {
  FakeEndpoint fake;
  TempDir tmp;
  const auto metrics = tmp.file("metrics.jsonl");
  Deployment d("--config " + write_file(tmp, "m.yaml", training_config(fake.base())) +
                   " ++telemetry.enabled=true ++telemetry.exporter=console"
                   " ++telemetry.console_path=" +
                   metrics,
               tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const int port = d.port_of("policy_model");

  EXPECT_EQ(tool_conversation(fake, port), (std::vector<int>{200, 200, 200}));
  EXPECT_EQ(d.output().find("on-policy check"), std::string::npos) << d.output();

  auto second = reasoning_conversation(fake, port);
  EXPECT_EQ(second.status, 200) << json::serialize(second.body) << "warn lets the turn through";
  ASSERT_EQ(d.stop(), 143);  // SIGTERM: telemetry exported
  const auto log = d.output();
  EXPECT_EQ(count_of(log, "on-policy check: session "), 1u) << log;
  EXPECT_NE(log.find("breaks at token " + std::to_string(reasoning_break_index()) + ":"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("generation_token_ids[0] is 60"), std::string::npos) << log;
  // One break in the whole run: the tool-calling conversation counted none.
  EXPECT_EQ(last_counter(metrics, kBreaks), std::optional<std::int64_t>(1)) << read_text(metrics);
}

TEST(OnPolicyCheck, FailTurnsABreakIntoA400SayingWhatBroke) {
  FakeEndpoint fake;
  TempDir tmp;
  Deployment d("--config " + write_file(tmp, "m.yaml",
                                        training_config(fake.base(),
                                                        "      on_token_contiguity_break: fail\n")),
               tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const int port = d.port_of("policy_model");
  EXPECT_EQ(tool_conversation(fake, port), (std::vector<int>{200, 200, 200}));
  auto second = reasoning_conversation(fake, port);
  ASSERT_EQ(second.status, 400) << json::serialize(second.body);
  ASSERT_TRUE(second.body.is_string()) << json::serialize(second.body);
  const std::string text(second.body.as_string());
  EXPECT_EQ(text.rfind("vllm_model: on-policy check: session ", 0), 0u) << text;
  EXPECT_NE(text.find("breaks at token " + std::to_string(reasoning_break_index()) + ":"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("is 66 where the previous turn's generation_token_ids[0] is 60"),
            std::string::npos)
      << text;  // 'B' of "Because." where the generated '<' of "<think>" was

  // Any other value stops the server at its start, naming the key.
  Deployment wrong(
      "--config " +
          write_file(tmp, "bad.yaml",
                     training_config(fake.base(), "      on_token_contiguity_break: abort\n")),
      tmp.file("log2"));
  EXPECT_FALSE(wrong.ready());
  EXPECT_NE(wrong.output().find(std::string(kVllm) +
                                ".on_token_contiguity_break must be warn or fail (got 'abort')"),
            std::string::npos)
      << wrong.output();
}

TEST(OnPolicyCheck, AFailedCheckFailsTheRolloutSoNoSuchRowReachesTraining) {
  FakeEndpoint fake;
  // Rollout 1: the model reasons before its tool call; rollout 2: it does not.
  const std::string reasoned_call =
      R"({"role":"assistant","content":"","reasoning_content":"Need the weather.","tool_calls":[)"
      R"({"id":"call_1","type":"function","function":{"name":"get_weather",)"
      R"("arguments":"{\"city\":\"Oslo\"}"}}]})";
  const std::string plain_call =
      R"({"role":"assistant","content":"","tool_calls":[{"id":"call_2","type":"function",)"
      R"("function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]})";
  fake.script("[" + scripted_answer(reasoned_call) + R"(,{"content":"Cold."},)" +
              scripted_answer(plain_call) + R"(,{"content":"Cold."}])");
  TempDir tmp;
  const std::string row = R"({"responses_create_params":{"input":"Weather in Oslo?","tools":)" +
                          std::string(kTools) + "}}\n";
  const auto input = write_file(tmp, "in.jsonl", row + row);
  auto r = gym::test::run_command(
      gym_binary() + " eval run --resources-server example_single_tool_call" +
      " --model-type vllm_model/vllm_model_for_training --model-url " + fake.base() +
      " --model fake-model --agent example_single_tool_call_simple_agent --input " + input +
      " --output " + tmp.file("out.jsonl") + " --concurrency 1 ++" + kVllm +
      ".on_token_contiguity_break=fail ++head_server.port=0 2>&1");
  EXPECT_EQ(r.code, 3) << r.output;
  const auto failures = gym::test::read_jsonl(tmp.file("out_failures.jsonl"));
  ASSERT_EQ(failures.size(), 1u) << r.output;
  EXPECT_NE(json::serialize(failures[0]).find("on-policy check"), std::string::npos)
      << json::serialize(failures[0]);
  const auto rows = gym::test::read_jsonl(tmp.file("out.jsonl"));
  ASSERT_EQ(rows.size(), 1u) << r.output;
  const auto text = json::serialize(rows[0]);
  EXPECT_NE(text.find("generation_token_ids"), std::string::npos) << text;
  EXPECT_NE(text.find("call_2"), std::string::npos) << "the row is the rollout without reasoning";
}

// ---- config sources a trainer uses: the env file and the initial config ----

TEST(TrainerConfig, EnvFileNoEnvFileAndInitialConfigThroughTheBinary) {
  TempDir cwd;
  cwd.write("env.yaml", "a: env_yaml\nb: env_yaml\nc: env_yaml\nd: env_yaml\n");
  cwd.write("c.yaml", "from_config_paths: 1\nd: file\n");
  const auto other = cwd.write("other.yaml", "a: other_env\n");
  const auto initial =
      cwd.write("initial.yaml", "config_paths: [c.yaml]\nb: initial\nc: initial\n");
  auto show = [&](const std::string& flags) { return gym_in(cwd.path(), "config show " + flags); };

  auto r = show("--initial-config " + initial + " c=cli");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("a: env_yaml"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("b: initial"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("c: cli"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("d: env_yaml"), std::string::npos) << "env.yaml is above the files";
  EXPECT_NE(r.output.find("from_config_paths: 1"), std::string::npos) << r.output;

  r = show("--env-file " + other);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("a: other_env"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("env_yaml"), std::string::npos) << r.output;

  r = show("--no-env-file --initial-config " + initial);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("env_yaml"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("d: file"), std::string::npos) << r.output;

  r = show("--env-file " + cwd.file("missing.yaml"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("the env file '" + cwd.file("missing.yaml") +
                          "' (--env-file) does not "
                          "exist"),
            std::string::npos)
      << r.output;
  r = show("--env-file " + other + " --no-env-file");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("excludes"), std::string::npos) << r.output;
  r = show("--initial-config " + cwd.file("nope.yaml"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("nope.yaml' does not exist"), std::string::npos) << r.output;
}
