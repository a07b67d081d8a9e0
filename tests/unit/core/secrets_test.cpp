// Secrets masked wherever a config is shown (gym config show, the head server).
#include "core/secrets.h"

#include "core/json_text.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace json = boost::json;

TEST(Secrets, KeysThatNameSecrets) {
  for (const char* key : {"policy_api_key",
                          "api_key",
                          "openai_api_key",
                          "hf_token",
                          "token",
                          "wandb_api_key",
                          "mlflow_tracking_token",
                          "Authorization",
                          "Proxy-Authorization",
                          "api-key",
                          "X-Api-Key",
                          "client_secret",
                          "db_password",
                          "aws_secret_access_key",
                          "Ocp-Apim-Subscription-Key",
                          "subscription-key",
                          "private_key",
                          "credentials",
                          "passwd",
                          "key",
                          "apikey",
                          "KEY_FILE",
                          "max_output_tokens",
                          "return_token_id_information",
                          "key_metrics",
                          "num_tokens"})
    EXPECT_TRUE(gym::core::is_secret_key(key)) << key;
  // Settings that only name tokenisation, and keys that name no secret.
  for (const char* key :
       {"tokenizer", "on_token_contiguity_break", "model", "base_url", "keep_alive", "host"})
    EXPECT_FALSE(gym::core::is_secret_key(key)) << key;
}

TEST(Secrets, HeadersAndQueryParametersThatCarryCredentials) {
  for (const char* name : {"Authorization", "Proxy-Authorization", "Cookie", "api-key", "x-api-key",
                           "Ocp-Apim-Subscription-Key", "X-Goog-Api-Key"})
    EXPECT_TRUE(gym::core::is_secret_header(name)) << name;
  for (const char* name : {"Content-Type", "Accept", "traceparent", "User-Agent", "Host"})
    EXPECT_FALSE(gym::core::is_secret_header(name)) << name;
  for (const char* name : {"api-key", "key", "token", "access_token", "sig", "X-Amz-Signature",
                           "X-Amz-Credential", "code_verifier_secret"})
    EXPECT_TRUE(gym::core::is_secret_query_parameter(name)) << name;
  for (const char* name : {"api-version", "model", "stream", "page"})
    EXPECT_FALSE(gym::core::is_secret_query_parameter(name)) << name;
}

TEST(Secrets, UrlsLoseTheirPasswordsAndSecretQueryValues) {
  using gym::core::masked_url;
  EXPECT_EQ(masked_url("http://user:pass@host/v1?api-key=XYZ"),
            "http://user:****@host/v1?api-key=****");
  EXPECT_EQ(masked_url("https://h/v1?api-version=2024-10-21&key=abc&sig=s%2Fg&x"),
            "https://h/v1?api-version=2024-10-21&key=****&sig=****&x");
  EXPECT_EQ(masked_url("https://ghp_token123@github.com/x"), "https://****@github.com/x");
  EXPECT_EQ(masked_url("postgres://u:p@db:5432/x"), "postgres://u:****@db:5432/x");
  // Nothing secret: the text as written, byte for byte (no normalisation).
  for (const char* same : {"http://127.0.0.1:8000/v1", "HTTP://Host:80/a/../b?q=%7e&token=",
                           "not a url", "", "http://h/?api-key", "user:pass", "/v1/models"})
    EXPECT_EQ(masked_url(same), same);
}

TEST(Secrets, UrlsInTextAreMasked) {
  using gym::core::masked_urls_in;
  EXPECT_EQ(masked_urls_in("model endpoint http://u:pw@h:1/v1/chat?api-key=K answered HTTP 401: "
                           "bad (see https://docs/x?token=T.)"),
            "model endpoint http://u:****@h:1/v1/chat?api-key=**** answered HTTP 401: bad (see "
            "https://docs/x?token=****.)");
  EXPECT_EQ(masked_urls_in("\"http://a:b@h\", ://x, s3://k@bucket/o"),
            "\"http://a:****@h\", ://x, s3://****@bucket/o");
  EXPECT_EQ(masked_urls_in("no url here"), "no url here");
}

TEST(Secrets, AnEchoedKeyIsMaskedHoweverJsonEscapesIt) {
  using gym::core::masked_secret;
  const std::string key = "sk-abc/123";
  EXPECT_EQ(masked_secret("key sk-abc/123 is invalid", key), "key **** is invalid");
  EXPECT_EQ(masked_secret(R"({"error":"key \u0073\u006B-abc\/123 invalid"})", key),
            R"({"error":"key **** invalid"})");
  EXPECT_EQ(masked_secret(R"("{\"key\":\"\\u0073k-abc\\/123\"}")", key), R"("{\"key\":\"****\"}")");
  EXPECT_EQ(masked_secret("?key=sk%2Dabc%2F123&x=1 sk-abc/123sk-abc/123", key),
            "?key=****&x=1 ********");
  // Almost the key is not the key; a key too short to tell from words is not looked for.
  EXPECT_EQ(masked_secret("sk-abc/12 sk\\u002", key), "sk-abc/12 sk\\u002");
  EXPECT_EQ(masked_secret("abc abc", "abc"), "abc abc");
}

TEST(Secrets, OverridesOfNumbersAndBooleansAreNotSecrets) {
  EXPECT_FALSE(gym::core::secret_override("++max_output_tokens=1024"));
  EXPECT_FALSE(gym::core::secret_override("++a.return_token_id_information=false"));
  EXPECT_FALSE(gym::core::secret_override("++a.stop_token_ids=[1, 2,3]"));
  EXPECT_TRUE(gym::core::secret_override("++a.api_keys=[sk-1,sk-2]"));
  EXPECT_FALSE(gym::core::secret_override("++policy_api_key=${oc.env:KEY}"));
  auto s = gym::core::secret_override("++a.private_key=pem");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->first, "++a.private_key=");
  EXPECT_EQ(gym::core::masked_command_line({"gym", "eval", "run", "--model-url",
                                            "http://u:p@h/v1?api-key=K", "++max_output_tokens=8",
                                            "++hf_token=hf_x"}),
            "gym eval run --model-url 'http://u:****@h/v1?api-key=****' ++max_output_tokens=8 "
            "'++hf_token=****'");
}

TEST(Secrets, MaskedAtAnyDepthAndTheRestKept) {
  auto cfg = gym::core::parse_json(R"({"policy_api_key":"sk-1","hf_token":"",
      "m":{"responses_api_models":{"vllm_model":{"api_key":"sk-2","model":"x",
           "default_headers":{"Authorization":"Bearer sk-3"},"max_output_tokens":5}}},
      "keys":[{"api_key":"sk-4"}],"tokens":["a"],"api_keys":null,"access_token":["t1","t2"]})")
                 .as_object();
  auto masked = gym::core::masked_secrets(cfg);
  EXPECT_EQ(gym::core::render_json(masked),
            R"({"policy_api_key":"****","hf_token":"","m":{"responses_api_models":{"vllm_model":)"
            R"({"api_key":"****","model":"x","default_headers":{"Authorization":"****"},)"
            R"("max_output_tokens":5}}},"keys":[{"api_key":"****"}],"tokens":["****"],)"
            R"("api_keys":null,"access_token":["****","****"]})");
  EXPECT_EQ(cfg.at("policy_api_key"), "sk-1");  // a copy: the original keeps its values
}

TEST(Secrets, EverythingUnderASecretKeyAndEveryUrlIsMasked) {
  auto cfg = gym::core::parse_json(R"({"credentials":{"user":"u","pass":"p","n":3},
      "base_url":"http://user:pass@host/v1?api-key=XYZ","max_output_tokens":1024,
      "return_token_id_information":false,"tokenizer":"Qwen/Qwen3-8B","stop_token_ids":[1,2],
      "Ocp-Apim-Subscription-Key":"abc","private_key":"-----BEGIN-----"})")
                 .as_object();
  EXPECT_EQ(gym::core::render_json(gym::core::masked_secrets(cfg)),
            R"({"credentials":{"user":"****","pass":"****","n":3},)"
            R"("base_url":"http://user:****@host/v1?api-key=****","max_output_tokens":1024,)"
            R"("return_token_id_information":false,"tokenizer":"Qwen/Qwen3-8B",)"
            R"("stop_token_ids":[1,2],"Ocp-Apim-Subscription-Key":"****","private_key":"****"})");
}
