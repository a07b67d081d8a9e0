// Secrets masked wherever a config is shown (gym config show, the head server).
#include "core/secrets.h"

#include "core/json_text.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace json = boost::json;

TEST(Secrets, KeysThatNameSecrets) {
  for (const char* key : {"policy_api_key", "api_key", "openai_api_key", "hf_token", "token",
                          "wandb_api_key", "mlflow_tracking_token", "Authorization", "api-key",
                          "X-Api-Key", "client_secret", "db_password", "aws_secret_access_key"})
    EXPECT_TRUE(gym::core::is_secret_key(key)) << key;
  for (const char* key : {"max_output_tokens", "return_token_id_information", "key_metrics",
                          "tokenizer", "model", "base_url", "keep_alive", "num_tokens"})
    EXPECT_FALSE(gym::core::is_secret_key(key)) << key;
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
            R"("max_output_tokens":5}}},"keys":[{"api_key":"****"}],"tokens":["a"],)"
            R"("api_keys":null,"access_token":["****","****"]})");
  EXPECT_EQ(cfg.at("policy_api_key"), "sk-1");  // a copy: the original keeps its values
}
