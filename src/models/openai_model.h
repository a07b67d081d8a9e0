#pragma once
// openai_model and azure_openai_model (docs/reference/model-servers.md): model servers in front of
// OpenAI's API, an Azure OpenAI deployment, or any endpoint that speaks the Responses API.
//
// openai_model (class SimpleModelServer): POST /v1/responses and /v1/chat/completions are
// forwarded to {openai_base_url}/responses and /chat/completions with the configured model,
// `Authorization: Bearer <openai_api_key>` and the default headers, extra_body under the body.
// azure_openai_model (class AzureOpenAIModelServer): Azure's URLs
// ({endpoint}/openai/deployments/<openai_model>/chat/completions?api-version=...) and `api-key`
// header; /v1/responses goes through Chat Completions with vllm_model's conversion.
#include "core/config.h"
#include "servers/registry.h"

#include <boost/json/object.hpp>

#include <cstddef>
#include <string>

namespace gym::models {

struct OpenAIModelConfig {
  std::string base_url;
  std::string api_key;
  std::string model;
  boost::json::value default_headers;  // openai_default_headers: mapping or null
  boost::json::object extra_body;
  bool drop_input_reasoning_items = false;
  std::size_t max_concurrent_requests = 0;  // 0 = unlimited
};
OpenAIModelConfig read_openai_model_config(const core::ServerInstance& instance);

struct AzureOpenAIModelConfig {
  std::string endpoint;    // openai_base_url: https://<resource>.openai.azure.com
  std::string api_key;     // openai_api_key, sent as `api-key`
  std::string deployment;  // openai_model
  std::string query;       // default_query as "?api-version=..."
  std::size_t num_concurrent_requests = 8;
};
AzureOpenAIModelConfig read_azure_openai_model_config(const core::ServerInstance& instance);

void register_openai_model(servers::Registry& registry);
void register_azure_openai_model(servers::Registry& registry);

}  // namespace gym::models
