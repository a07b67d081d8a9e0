// The verdicts of the model endpoint preflight (orchestrator/model_preflight.h) on the answers
// an endpoint may give to GET <base_url>/models, and the checks read from an instance's config.
#include "orchestrator/model_preflight.h"

#include "core/json_text.h"
#include "text_search.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace gym::orchestrator {
namespace {

namespace json = boost::json;
using Kind = PreflightVerdict::Kind;

ModelEndpointCheck vllm_check(const std::string& url = "http://h:8000/v1") {
  ModelEndpointCheck c;
  c.url = url;
  c.url_key = "policy_model.responses_api_models.vllm_model.base_url";
  c.model = "Qwen/Qwen3-8B";
  c.model_key = "policy_model.responses_api_models.vllm_model.model";
  c.model_from_flag = true;
  c.api_key_key = "policy_model.responses_api_models.vllm_model.api_key";
  c.api_key = "sk-secret-1234";
  return c;
}

const char* kList =
    R"({"object":"list","data":[{"id":"Qwen/Qwen3-8B","object":"model","max_model_len":4096}]})";

using gym::test::contains;

TEST(ModelPreflight, AListServingTheModelPasses) {
  EXPECT_EQ(check_models_answer(vllm_check(), 200, kList).kind, Kind::ok);
  auto c = vllm_check();
  c.max_output_tokens = 4095;
  EXPECT_EQ(check_models_answer(c, 200, kList).kind, Kind::ok);
  // A hosted API's list has no max_model_len: nothing to compare.
  c.max_output_tokens = 100000;
  EXPECT_EQ(
      check_models_answer(c, 200, R"({"object":"list","data":[{"id":"Qwen/Qwen3-8B"}]})").kind,
      Kind::ok);
}

TEST(ModelPreflight, ANotFoundOrAWebPageMeansAWrongUrl) {
  auto v = check_models_answer(vllm_check("http://h:8000/"), 404, R"({"detail":"Not Found"})");
  EXPECT_EQ(v.kind, Kind::fail);
  EXPECT_TRUE(contains(v.message, "GET http://h:8000/models answered 404")) << v.message;
  EXPECT_TRUE(contains(v.message, "try http://h:8000/v1")) << v.message;
  v = check_models_answer(vllm_check(), 200, "<html><body>Welcome</body></html>");
  EXPECT_EQ(v.kind, Kind::fail);
  EXPECT_TRUE(contains(v.message, "the base URL is probably wrong")) << v.message;
  EXPECT_FALSE(contains(v.message, "try ")) << "it already ends in /v1: " << v.message;
}

TEST(ModelPreflight, RefusedKeysNameTheKeyAndOtherFailuresOnlyWarn) {
  auto v = check_models_answer(vllm_check(), 401, R"({"error":"bad key sk-secret-1234"})");
  EXPECT_EQ(v.kind, Kind::fail);
  EXPECT_TRUE(contains(v.message, "vllm_model.api_key (--model-api-key, policy_api_key)"))
      << v.message;
  EXPECT_EQ(check_models_answer(vllm_check(), 403, "").kind, Kind::fail);
  for (int status : {500, 503, 405, 429}) {
    v = check_models_answer(vllm_check(), status, "upstream sk-secret-1234 down");
    EXPECT_EQ(v.kind, Kind::warn) << status;
    EXPECT_FALSE(contains(v.message, "sk-secret-1234")) << v.message;
  }
}

TEST(ModelPreflight, MessagesMaskAPasswordOrKeyInTheUrlAndAnEscapedEcho) {
  auto v = check_models_answer(vllm_check("http://u:pw-9911@h:8000/v1?api-key=qk-9911"), 503,
                               R"({"error":"bad key \u0073k-secret-1234"})");
  EXPECT_EQ(v.kind, Kind::warn);
  EXPECT_TRUE(contains(v.message, "http://u:****@h:8000/v1?api-key=****")) << v.message;
  for (const char* secret : {"pw-9911", "qk-9911", "\\u0073k-secret-1234"})
    EXPECT_FALSE(contains(v.message, secret)) << v.message;
  v = check_models_answer(vllm_check("http://u:pw-9911@h:8000/"), 404, "{}");
  EXPECT_FALSE(contains(v.message, "pw-9911")) << v.message;
}

TEST(ModelPreflight, AModelNotServedListsTheServedOnesAndTheKey) {
  json::array data;
  for (int i = 0; i < 22; ++i) data.push_back(json::object{{"id", "m" + std::to_string(i)}});
  const auto body = core::render_json(json::object{{"object", "list"}, {"data", data}});
  auto v = check_models_answer(vllm_check(), 200, body);
  EXPECT_EQ(v.kind, Kind::fail);
  EXPECT_TRUE(contains(v.message,
                       "does not serve model 'Qwen/Qwen3-8B' (--model / policy_model_name, "
                       "policy_model.responses_api_models.vllm_model.model)"))
      << v.message;
  EXPECT_TRUE(contains(v.message, "it serves: m0, m1,")) << v.message;
  EXPECT_TRUE(contains(v.message, "m19 (and 2 more)")) << v.message;
  EXPECT_FALSE(contains(v.message, "m20")) << v.message;
}

TEST(ModelPreflight, MaxOutputTokensAtOrOverMaxModelLenFail) {
  auto c = vllm_check();
  c.max_output_tokens = 4096;
  auto v = check_models_answer(c, 200, kList);
  EXPECT_EQ(v.kind, Kind::fail);
  EXPECT_TRUE(contains(v.message, "--max-output-tokens 4096")) << v.message;
  EXPECT_TRUE(contains(v.message, "serves Qwen/Qwen3-8B with max_model_len 4096")) << v.message;
}

TEST(ModelPreflight, ChecksComeFromTheLiveModelServersKeys) {
  const auto cfg =
      core::parse_json(
          R"({"policy_model_name":"m","responses_create_params":{"max_output_tokens":512}})")
          .as_object();
  const auto vllm = core::parse_json(
                        R"({"base_url":["http://a/v1","http://b/v1"],"model":"m","api_key":"k",
                            "default_headers":{"X-Team":"rl","authorization":"no"}})")
                        .as_object();
  auto checks = model_endpoint_checks(cfg, "vllm_model", vllm, "p.responses_api_models.vllm_model");
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[1].url, "http://b/v1");
  EXPECT_EQ(checks[0].url_key, "p.responses_api_models.vllm_model.base_url");
  EXPECT_TRUE(checks[0].model_from_flag);
  EXPECT_EQ(checks[0].max_output_tokens, 512);
  ASSERT_EQ(checks[0].headers.size(), 2u);
  EXPECT_EQ(checks[0].headers[0].first, "X-Team");
  EXPECT_EQ(checks[0].headers[1].second, "Bearer k");

  const auto openai =
      core::parse_json(
          R"({"openai_base_url":"https://api/v1","openai_model":"gpt","openai_api_key":"k"})")
          .as_object();
  checks = model_endpoint_checks(cfg, "openai_model", openai, "p");
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].model_key, "p.openai_model");
  EXPECT_FALSE(checks[0].model_from_flag);
  EXPECT_TRUE(model_endpoint_checks(cfg, "azure_openai_model", openai, "p").empty());
  EXPECT_EQ(models_url("http://h/v1/"), "http://h/v1/models");
}

TEST(ModelEndpoints, EveryBaseUrlOfEveryModelServerWithItsCheck) {
  const auto cfg = core::parse_json(R"({
    "env": {"resources_servers": {"mcqa": {"base_url": "http://not-a-model/v1"}}},
    "live": {"responses_api_models": {"vllm_model": {
      "base_url": ["http://a:8000/v1/", "http://b:8000/v1"], "model": "m", "api_key": "k",
      "extra": {"judge_base_url": "https://judge/v1"}}}},
    "azure": {"responses_api_models": {"azure_openai_model": {
      "openai_base_url": "https://az.example/openai"}}}})")
                       .as_object();
  const auto instances = core::find_server_instances(cfg);
  auto endpoints = model_endpoints(cfg, instances, true);
  ASSERT_EQ(endpoints.size(), 4u) << "the resources server's base_url is no model endpoint";
  EXPECT_EQ(endpoints[0].key, "live.responses_api_models.vllm_model.base_url");
  EXPECT_EQ(endpoints[1].url, "http://b:8000/v1");
  EXPECT_EQ(endpoints[2].key, "live.responses_api_models.vllm_model.extra.judge_base_url");
  // vllm_model's own URLs are checked through /models; the nested one and azure's only answer.
  ASSERT_TRUE(endpoints[0].check && endpoints[1].check);
  EXPECT_FALSE(endpoints[2].check);
  EXPECT_FALSE(endpoints[3].check);
  EXPECT_EQ(endpoints[0].probe_url(), "http://a:8000/v1/models");
  EXPECT_EQ(endpoints[2].probe_url(), "https://judge/v1/models");
  EXPECT_EQ(endpoints[3].probe_url(), "https://az.example/openai");
  // model_endpoint_preflight: false keeps the readiness wait, without the checks.
  endpoints = model_endpoints(cfg, instances, false);
  ASSERT_EQ(endpoints.size(), 4u);
  for (const auto& e : endpoints) EXPECT_FALSE(e.check) << e.key;
}

}  // namespace
}  // namespace gym::orchestrator
