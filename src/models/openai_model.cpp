#include "models/openai_model.h"

#include "core/json_text.h"
#include "models/async_limiter.h"
#include "models/chat_conversion.h"
#include "models/instance_keys.h"
#include "models/model_routes.h"
#include "models/upstream_client.h"
#include "servers/model_server.h"
#include "servers/responses_api.h"

#include <boost/json.hpp>

#include <memory>

namespace gym::models {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;

namespace {

std::string percent_encoded(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

// extra_body under the request: the request's own fields win.
json::object over_extra_body(const json::object& extra, const json::object& body) {
  json::object out = extra;
  for (const auto& [k, v] : body) out[k] = v;
  return out;
}

Response bad_request(std::string_view impl, const std::exception& e) {
  return Response::json(json::string(std::string(impl) + ": " + e.what()), 400);
}

// The endpoint's answer, checked to be a Response (an endpoint that answers something else
// would fail the agent with a confusing error later).
Response checked_response(const json::object& answer, const UpstreamEndpoint& endpoint) {
  if (auto problem = servers::response_problem(answer))
    return upstream_failure(UpstreamError("model endpoint " + endpoint.url("/responses") +
                                              " answered with something that is not a "
                                              "Response: " +
                                              *problem,
                                          200, ""));
  return Response::json(answer);
}

// POST /v1/chat/completions forwarded to the endpoint with the configured model (`base` under
// the body: openai_model's extra_body), within the server's concurrency limit. `base` is taken
// by value: a coroutine's reference parameter would outlive a temporary argument.
asio::awaitable<Response> forward_chat(http::HttpClient& client, const UpstreamEndpoint& endpoint,
                                       AsyncLimiter& limiter, json::object base,
                                       const std::string& model, const json::value& body,
                                       telemetry::TraceContext trace) {
  if (auto problem = chat_body_problem(body)) co_return std::move(*problem);
  json::object out = over_extra_body(base, body.get_object());
  out["model"] = model;
  try {
    auto slot = co_await limiter.acquire();
    co_return Response::json(
        co_await post_upstream(client, endpoint, "/chat/completions", out, trace));
  } catch (const UpstreamError& e) {
    co_return upstream_failure(e);
  }
}

struct OpenAIServer {
  servers::ServerContext& ctx;
  OpenAIModelConfig config;
  UpstreamEndpoint endpoint;
  AsyncLimiter limiter;

  asio::awaitable<Response> responses(Request& req, json::object& params) {
    json::object body = over_extra_body(config.extra_body, params);
    body["model"] = config.model;
    if (config.drop_input_reasoning_items)
      if (auto* input = body.if_contains("input"); input && input->is_array()) {
        json::array kept;
        for (auto& item : input->get_array())
          if (!(item.is_object() && item.get_object().contains("type") &&
                item.get_object().at("type") == "reasoning"))
            kept.push_back(std::move(item));
        *input = std::move(kept);
      }
    try {
      auto slot = co_await limiter.acquire();
      auto answer = co_await post_upstream(*ctx.client, endpoint, "/responses", body, req.trace);
      co_return checked_response(answer, endpoint);
    } catch (const UpstreamError& e) {
      co_return upstream_failure(e);
    }
  }

  asio::awaitable<Response> chat_completions(Request& req, json::value& body) {
    return forward_chat(*ctx.client, endpoint, limiter, config.extra_body, config.model, body,
                        req.trace);
  }
};

struct AzureServer {
  servers::ServerContext& ctx;
  AzureOpenAIModelConfig config;
  UpstreamEndpoint endpoint;  // base = {endpoint}/openai/deployments/<deployment>
  AsyncLimiter limiter;

  asio::awaitable<Response> responses(Request& req, json::object& params) {
    // Upstream's Azure server converts with vllm_model's converter (its defaults: a reasoning
    // parser, no token ids).
    const ConversionOptions options{false, true};
    try {
      auto chat = responses_to_chat_params(params, options);
      chat["model"] = config.deployment;
      auto slot = co_await limiter.acquire();
      auto completion =
          co_await post_upstream(*ctx.client, endpoint, "/chat/completions", chat, req.trace);
      params["model"] = config.deployment;
      co_return Response::json(chat_completion_to_response(params, completion, options));
    } catch (const ConversionError& e) {
      co_return bad_request("azure_openai_model", e);
    } catch (const UpstreamError& e) {
      co_return upstream_failure(e);
    }
  }

  asio::awaitable<Response> chat_completions(Request& req, json::value& body) {
    return forward_chat(*ctx.client, endpoint, limiter, {}, config.deployment, body, req.trace);
  }
};

}  // namespace

OpenAIModelConfig read_openai_model_config(const core::ServerInstance& instance) {
  InstanceKeys keys(instance);
  OpenAIModelConfig c;
  c.base_url = checked_base_url(keys.required_string("openai_base_url", kModelUrlHow),
                                keys.key("openai_base_url"));
  c.api_key = keys.required_string("openai_api_key", kModelApiKeyHow);
  c.model = keys.required_string("openai_model", kModelNameHow);
  if (const auto* headers = keys.mapping("openai_default_headers")) c.default_headers = *headers;
  if (const auto* extra = keys.mapping("extra_body")) c.extra_body = *extra;
  c.drop_input_reasoning_items = keys.flag("drop_input_reasoning_items", false);
  c.max_concurrent_requests = static_cast<std::size_t>(keys.count("max_concurrent_requests", 0, 0));
  return c;
}

AzureOpenAIModelConfig read_azure_openai_model_config(const core::ServerInstance& instance) {
  InstanceKeys keys(instance);
  AzureOpenAIModelConfig c;
  c.endpoint = checked_base_url(keys.required_string("openai_base_url", kModelUrlHow),
                                keys.key("openai_base_url"));
  c.api_key = keys.required_string("openai_api_key", kModelApiKeyHow);
  c.deployment = keys.required_string("openai_model", kModelNameHow);
  const auto* query = keys.mapping("default_query");
  const auto* version = query ? query->if_contains("api-version") : nullptr;
  if (!version || !version->is_string() || version->get_string().empty() ||
      version->get_string() == "???")
    throw core::ConfigError("config error: " + keys.key("default_query") +
                            " needs the Azure OpenAI api-version, e.g. ++" +
                            keys.key("default_query") + ".api-version=2024-10-21");
  for (const auto& [k, v] : *query) {
    c.query += c.query.empty() ? '?' : '&';
    c.query += percent_encoded(k) + "=" +
               percent_encoded(v.is_string() ? std::string(v.get_string()) : core::render_json(v));
  }
  c.num_concurrent_requests = static_cast<std::size_t>(keys.count("num_concurrent_requests", 8, 1));
  return c;
}

void register_openai_model(servers::Registry& registry) {
  registry.add({
      "responses_api_models",
      "openai_model",
      "SimpleModelServer",
      [](servers::ServerContext& ctx, http::Router& router) {
        auto config = read_openai_model_config(ctx.instance);
        UpstreamEndpoint endpoint{
            config.base_url, "",      endpoint_headers(config.api_key, &config.default_headers),
            config.api_key,  nullptr, {}};
        apply_call_settings(endpoint, ctx.global);
        const auto limit = config.max_concurrent_requests;
        add_model_routes(ctx,
                         std::make_shared<OpenAIServer>(OpenAIServer{
                             ctx, std::move(config), std::move(endpoint), AsyncLimiter(limit)}),
                         router);
      },
  });
}

void register_azure_openai_model(servers::Registry& registry) {
  registry.add({
      "responses_api_models",
      "azure_openai_model",
      "AzureOpenAIModelServer",
      [](servers::ServerContext& ctx, http::Router& router) {
        auto config = read_azure_openai_model_config(ctx.instance);
        UpstreamEndpoint endpoint{
            config.endpoint + "/openai/deployments/" + percent_encoded(config.deployment),
            config.query,
            endpoint_headers(config.api_key, nullptr, "api-key"),
            config.api_key,
            nullptr,
            {}};
        apply_call_settings(endpoint, ctx.global);
        const auto limit = config.num_concurrent_requests;
        add_model_routes(ctx,
                         std::make_shared<AzureServer>(AzureServer{
                             ctx, std::move(config), std::move(endpoint), AsyncLimiter(limit)}),
                         router);
      },
  });
}

}  // namespace gym::models
