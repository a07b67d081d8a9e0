#pragma once
// vllm_model: a Responses API model server in front of an OpenAI-compatible Chat Completions
// endpoint (vLLM, SGLang, any gateway), with upstream's config keys
// (docs/reference/model-servers.md). POST /v1/responses converts to Chat Completions
// (models/chat_conversion.h) and back; POST /v1/chat/completions is forwarded with the same
// preprocessing. Class VLLMModel.
#include "core/config.h"
#include "models/chat_conversion.h"
#include "servers/registry.h"

#include <boost/json/object.hpp>

#include <string>
#include <vector>

namespace gym::models {

// What vllm_model does when a turn's prompt_token_ids do not extend the previous turn's tokens
// (models/token_contiguity.h): count and log it, or also fail the turn with a 400.
enum class ContiguityBreakAction { warn, fail };

struct VllmModelConfig {
  std::vector<std::string> base_urls;  // base_url: one URL or a list; sessions stick to one
  std::string api_key = "EMPTY";       // a local vLLM needs no key
  std::string model;
  bool return_token_id_information = false;
  bool request_prompt_and_generation_token_ids = false;
  bool uses_reasoning_parser = true;
  bool uses_interleaved_reasoning = true;
  bool preserve_reasoning_in_assistant_content = false;
  bool replace_developer_role_with_system = false;
  bool sequential_reasoning_allowed = true;
  bool is_responses_native = false;
  boost::json::object chat_template_kwargs;
  boost::json::object sampling_overrides;
  boost::json::object extra_body;
  boost::json::value default_headers;  // a mapping of header -> value, or null
  // on_token_contiguity_break: warn | fail (gym-cpp's on-policy check)
  ContiguityBreakAction on_token_contiguity_break = ContiguityBreakAction::warn;

  ConversionOptions conversion() const {
    return {return_token_id_information, uses_reasoning_parser};
  }
};

// Reads and checks the instance's keys; a ConfigError names the key (an unsupported upstream
// key set, a missing base_url/model, a bad URL, an invalid combination). A missing api_key is
// "EMPTY".
VllmModelConfig read_vllm_model_config(const core::ServerInstance& instance);

// The Chat Completions body vllm_model sends for `body` (a chat create-params object, e.g. one
// converted from a Responses request): model, chat_template_kwargs and extra_body (config,
// then the request's metadata), token-id requests, reasoning moved out of assistant content,
// sampling_overrides last. Throws ConversionError for what it cannot send.
boost::json::object vllm_chat_body(const VllmModelConfig& config, boost::json::object body);

// Which of `n` endpoints serves `session_id`: the first 8 bytes of its SHA-256, big-endian,
// modulo n (upstream's choice), so one session always meets one engine and its prefix cache.
std::size_t endpoint_for_session(std::string_view session_id, std::size_t n);

void register_vllm_model(servers::Registry& registry);

}  // namespace gym::models
