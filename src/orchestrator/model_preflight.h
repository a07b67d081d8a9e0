#pragma once
// Preflight of a live model server's endpoint at start: once `<base_url>/models` answers, is it
// an OpenAI model list, does it serve the configured model, and does the run's
// max_output_tokens fit the model's context? Pure: the orchestrator does the GET.
#include "core/config.h"

#include <boost/json/fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gym::orchestrator {

// What is checked against one base URL of one model server instance.
struct ModelEndpointCheck {
  std::string url;               // the base URL as configured
  std::string url_key;           // its dotted config key
  std::string model;             // the configured model name; "" skips the name check
  std::string model_key;         // its dotted config key
  bool model_from_flag = false;  // the name is policy_model_name (--model)
  std::string api_key_key;       // dotted key of the API key
  std::string api_key;           // masked wherever the endpoint's answer is quoted
  std::vector<std::pair<std::string, std::string>> headers;  // what the model server sends
  std::optional<std::int64_t> max_output_tokens;  // responses_create_params.max_output_tokens
};

struct PreflightVerdict {
  enum class Kind { ok, warn, fail } kind = Kind::ok;
  std::string message;  // for warn and fail
};

// `<base_url>/models`, the base URL without its trailing slashes.
std::string models_url(const std::string& base_url);

// The checks of every vllm_model / openai_model instance of `instance_config` (one
// implementation mapping; `prefix` its dotted path): one per base URL, with the run's
// max_output_tokens from the merged config `cfg`. Other implementations have none.
std::vector<ModelEndpointCheck> model_endpoint_checks(const boost::json::object& cfg,
                                                      const std::string& impl,
                                                      const boost::json::object& instance_config,
                                                      const std::string& prefix);

// A URL the deployment waits for before collection starts: a `*base_url` of a model server
// instance (each element of a list), with its preflight check when its implementation has one.
struct ModelEndpoint {
  std::string key;  // its dotted config key
  std::string url;  // as configured
  std::optional<ModelEndpointCheck> check;

  // What readiness GETs: `<base_url>/models` with a check; else the URL itself without trailing
  // slashes, `/models` appended to one ending in `/v1`.
  std::string probe_url() const;
};

// Every endpoint of the model server instances among `instances`, in config order, with the
// checks of model_endpoint_checks when `preflight` (model_endpoint_preflight) is on.
std::vector<ModelEndpoint> model_endpoints(const boost::json::object& cfg,
                                           const std::vector<core::ServerInstance>& instances,
                                           bool preflight);

// The verdict on GET <url>/models answering `status` with `body`.
PreflightVerdict check_models_answer(const ModelEndpointCheck& check, int status,
                                     const std::string& body);

}  // namespace gym::orchestrator
