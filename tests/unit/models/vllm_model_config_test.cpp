// vllm_model's keys (models/vllm_model.h): the api_key default and on_token_contiguity_break.
#include "models/vllm_model.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace gym::models {
namespace {

namespace json = boost::json;

core::ServerInstance instance(std::string_view keys) {
  return {"policy_model", "responses_api_models", "vllm_model", json::parse(keys).as_object()};
}

std::string config_error_of(std::string_view keys) {
  try {
    read_vllm_model_config(instance(keys));
  } catch (const core::ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError for " << keys;
  return "";
}

TEST(VllmModelConfig, ApiKeyIsEmptyUnlessSet) {
  EXPECT_EQ(
      read_vllm_model_config(instance(R"({"base_url":"http://h:8000/v1","model":"m"})")).api_key,
      "EMPTY");
  EXPECT_EQ(read_vllm_model_config(
                instance(R"({"base_url":"http://h:8000/v1","model":"m","api_key":null})"))
                .api_key,
            "EMPTY");
  EXPECT_EQ(read_vllm_model_config(
                instance(R"({"base_url":"http://h:8000/v1","model":"m","api_key":"sk-1"})"))
                .api_key,
            "sk-1");
  // The other required keys stay required.
  EXPECT_NE(config_error_of(R"({"base_url":"http://h:8000/v1"})")
                .find("policy_model.responses_api_models.vllm_model.model is required"),
            std::string::npos);
}

TEST(VllmModelConfig, OnTokenContiguityBreakIsWarnOrFail) {
  const std::string base = R"("base_url":"http://h:8000/v1","model":"m")";
  EXPECT_EQ(read_vllm_model_config(instance("{" + base + "}")).on_token_contiguity_break,
            ContiguityBreakAction::warn);
  EXPECT_EQ(read_vllm_model_config(instance("{" + base + R"(,"on_token_contiguity_break":"fail"})"))
                .on_token_contiguity_break,
            ContiguityBreakAction::fail);
  EXPECT_EQ(read_vllm_model_config(instance("{" + base + R"(,"on_token_contiguity_break":"warn"})"))
                .on_token_contiguity_break,
            ContiguityBreakAction::warn);
  const auto message = config_error_of("{" + base + R"(,"on_token_contiguity_break":"abort"})");
  EXPECT_NE(message.find("policy_model.responses_api_models.vllm_model.on_token_contiguity_break "
                         "must be warn or fail (got 'abort')"),
            std::string::npos)
      << message;
  EXPECT_NE(config_error_of("{" + base + R"(,"on_token_contiguity_break":true})")
                .find("on_token_contiguity_break must be a string"),
            std::string::npos);
}

}  // namespace
}  // namespace gym::models
