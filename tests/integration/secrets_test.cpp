// Secrets that must not leave a process (issue 28): a model endpoint's key is not sent on to
// another origin a redirect points to; a config's secrets (keys named like secrets, passwords and
// keys inside URLs) are masked by `gym config show` and the head server; a key an endpoint echoes
// back JSON-escaped is masked in the failure text and the request-debug log. vllm_model under the
// real `gym env start`, talking HTTP to the fake endpoint (tests/support/fake_openai.cpp).
#include "files.h"
#include "live_deployment.h"
#include "process.h"
#include "temp_dir.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <string>

namespace json = boost::json;
using gym::test::Deployment;
using gym::test::FakeEndpoint;
using gym::test::post_json;
using gym::test::TempDir;
using gym::test::write_file;

namespace {

constexpr const char* kSecret = "sk-secrets-test-9f8e7d6c5b";

std::string gym_binary() { return gym::test::build_path("src/cli/gym"); }

std::string policy_yaml(const FakeEndpoint& fake) {
  return "policy_model:\n  responses_api_models:\n    vllm_model:\n      base_url: " + fake.base() +
         "\n      api_key: " + kSecret +
         "\n      model: fake-model\n      return_token_id_information: false\n";
}

std::string text_of(const gym::test::Answer& a) {
  return a.body.is_string() ? std::string(a.body.as_string()) : json::serialize(a.body);
}

// The key as JSON escapes it when every character is spelled \uXXXX.
std::string json_escaped(std::string_view text) {
  std::string out;
  char buf[8];
  for (unsigned char c : text) {
    std::snprintf(buf, sizeof buf, "\\u%04x", c);
    out += buf;
  }
  return out;
}

// The value of the Authorization header a chat call of `fake` received, "" when it had none.
std::string authorization_of(const json::value& request) {
  const auto& headers = request.at("headers").as_object();
  const auto* a = headers.if_contains("authorization");
  return a ? std::string(a->as_string()) : std::string();
}

}  // namespace

TEST(Secrets, ARedirectToAnotherOriginDoesNotCarryTheKey) {
  FakeEndpoint fake, elsewhere;
  TempDir tmp;
  Deployment d("--config " + write_file(tmp, "m.yaml", policy_yaml(fake)), tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const int port = d.port_of("policy_model");

  // Same origin (a relative Location): the key goes along.
  fake.script(R"([{"status":307,"headers":{"Location":"/v1/chat/completions"}}])");
  auto a = post_json(port, "/v1/responses", R"({"input":"same"})");
  ASSERT_EQ(a.status, 200) << text_of(a);
  auto seen = fake.received();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(authorization_of(seen.at(1)), std::string("Bearer ") + kSecret);

  // Another port of the same host is another origin: the call goes on without the key.
  const std::string to = "http://127.0.0.1:" + std::to_string(elsewhere.port);
  fake.script(R"([{"status":307,"headers":{"Location":")" + to + R"(/v1/chat/completions"}}])");
  a = post_json(port, "/v1/responses", R"({"input":"elsewhere"})");
  ASSERT_EQ(a.status, 200) << text_of(a);
  seen = elsewhere.received();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(authorization_of(seen.at(0)), "");
  EXPECT_EQ(json::serialize(seen.at(0)).find(kSecret), std::string::npos) << seen.at(0);
  // Said once, naming both origins, never the key.
  const std::string from = "http://127.0.0.1:" + std::to_string(fake.port);
  EXPECT_TRUE(d.wait_for_output("redirect " + from + " -> " + to)) << d.output();
  fake.script(R"([{"status":307,"headers":{"Location":")" + to + R"(/v1/chat/completions"}}])");
  ASSERT_EQ(post_json(port, "/v1/responses", R"({"input":"again"})").status, 200);
  EXPECT_EQ(elsewhere.received().size(), 2u);
  const std::string log = d.output();
  EXPECT_EQ(log.find("redirect " + from + " -> " + to), log.rfind("redirect " + from + " -> " + to))
      << log;
  EXPECT_NE(log.find("without the request's credentials (Authorization)"), std::string::npos)
      << log;
  EXPECT_EQ(log.find(kSecret), std::string::npos) << log;
}

namespace {

// Secrets of every kind the masking rule knows, each with a value found nowhere else.
const char* const kConfigSecrets[] = {"subkey-4242", "pem-body-4242", "hunter2-4242",
                                      "urlpass-4242", "urlkey-4242"};

std::string secret_config(const FakeEndpoint& fake) {
  return policy_yaml(fake) +
         "Ocp-Apim-Subscription-Key: subkey-4242\n"
         "private_key: pem-body-4242\n"
         "credentials:\n  user: alice\n  password: hunter2-4242\n"
         "mirror_endpoint:\n"
         "  base_url: http://alice:urlpass-4242@mirror.example/v1?api-key=urlkey-4242&v=2\n"
         "  max_output_tokens: 1024\n";
}

void expect_masked(const std::string& shown) {
  for (const char* secret : kConfigSecrets)
    EXPECT_EQ(shown.find(secret), std::string::npos) << secret << " in:\n" << shown;
  EXPECT_EQ(shown.find(kSecret), std::string::npos) << shown;
  // What is not a secret stays readable.
  EXPECT_NE(shown.find("http://alice:****@mirror.example/v1?api-key=****&v=2"), std::string::npos)
      << shown;
  EXPECT_NE(shown.find("max_output_tokens: 1024"), std::string::npos) << shown;
  EXPECT_NE(shown.find("return_token_id_information: false"), std::string::npos) << shown;
}

}  // namespace

TEST(Secrets, ConfigShowAndTheHeadServerMaskEverySecret) {
  FakeEndpoint fake;
  TempDir tmp;
  const std::string config = write_file(tmp, "m.yaml", secret_config(fake));
  auto show = gym::test::run_command(gym_binary() + " config show --config " + config + " 2>&1");
  EXPECT_EQ(show.code, 0) << show.output;
  expect_masked(show.output);

  Deployment d("--config " + config, tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const auto served = json::parse(d.head_get("/global_config_dict_yaml"));
  ASSERT_TRUE(served.is_string()) << served;
  expect_masked(std::string(served.as_string()));
}

TEST(Secrets, AKeyEchoedJsonEscapedIsMaskedInTheFailureAndTheDebugLog) {
  FakeEndpoint fake;
  TempDir tmp;
  Deployment d("--config " + write_file(tmp, "m.yaml", policy_yaml(fake)) +
                   " ++global_aiohttp_client_request_debug=true",
               tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  // An endpoint that echoes the key back, spelled two ways JSON allows.
  const std::string escaped = json_escaped(kSecret);
  std::string dashed = kSecret;
  dashed.replace(2, 1, "\\u002D");  // "sk\u002Dsecrets-..."
  const std::string raw = R"({"error":{"message":"Incorrect API key provided: )" + escaped +
                          " (also " + dashed + R"x()","code":"invalid_api_key"}})x";
  fake.script(json::serialize(json::array{json::object{{"status", 401}, {"raw", raw}}}));
  auto a = post_json(d.port_of("policy_model"), "/v1/responses", R"({"input":"hi"})");
  EXPECT_EQ(a.status, 401) << text_of(a);
  const std::string failure = text_of(a);
  EXPECT_NE(failure.find("answered HTTP 401"), std::string::npos) << failure;
  EXPECT_NE(failure.find("Incorrect API key provided: **** (also ****)"), std::string::npos)
      << failure;
  EXPECT_EQ(failure.find(escaped), std::string::npos) << failure;
  EXPECT_EQ(failure.find(dashed), std::string::npos) << failure;
  // The request-debug line of the model server logs the body, masked the same way.
  EXPECT_TRUE(d.wait_for_output("failed with 401")) << d.output();
  const std::string log = d.output();
  EXPECT_NE(log.find("Incorrect API key provided: **** (also ****)"), std::string::npos) << log;
  EXPECT_EQ(log.find(escaped), std::string::npos) << log;
  EXPECT_EQ(log.find(dashed), std::string::npos) << log;
  EXPECT_EQ(log.find(kSecret), std::string::npos) << log;
}
