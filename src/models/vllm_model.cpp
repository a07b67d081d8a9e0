#include "models/vllm_model.h"

#include "core/json_text.h"
#include "models/instance_keys.h"
#include "models/model_routes.h"
#include "models/token_contiguity.h"
#include "models/upstream_client.h"
#include "servers/model_server.h"
#include "servers/responses_api.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include <ctime>
#include <memory>

namespace gym::models {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;

namespace {

// Upstream keys gym-cpp leaves out, and why (a startup error when set).
constexpr std::pair<std::string_view, std::string_view> kUnsupported[] = {
    {"audio_root", "audio inputs are not implemented"},
    {"use_completions_api", "the Completions API path is not implemented; use Chat Completions"},
    {"render_chat_template",
     "client-side chat templates need a tokenizer, which gym-cpp does "
     "not load"},
    {"tokenizer", "gym-cpp does not load tokenizers"},
};

json::object copy_or_empty(const json::object* o) { return o ? *o : json::object(); }

// A metadata value that upstream reads as JSON text (metadata values are strings).
json::object metadata_json(const json::object& metadata, std::string_view key) {
  const auto* v = metadata.if_contains(key);
  if (!v || v->is_null() || (v->is_string() && v->get_string().empty())) return {};
  if (!v->is_string())
    throw ConversionError("metadata." + std::string(key) + " must be a JSON object as a string");
  boost::system::error_code ec;
  json::value parsed = core::parse_json(v->get_string(), ec);
  if (ec || !parsed.is_object())
    throw ConversionError("metadata." + std::string(key) +
                          " is not a JSON object: " + std::string(v->get_string()));
  return std::move(parsed.get_object());
}

// A chat.completion with one empty assistant message (upstream's answer for a prompt that no
// longer fits: finish_reason "length").
json::object empty_completion(const std::string& model, std::string_view finish_reason) {
  json::object message{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", nullptr}};
  json::object choice{{"index", 0}, {"finish_reason", finish_reason}, {"message", message}};
  return json::object{{"id", "chtcmpl-123"},
                      {"object", "chat.completion"},
                      {"created", static_cast<std::int64_t>(std::time(nullptr))},
                      {"model", model},
                      {"choices", json::array{choice}}};
}

// Reasoning moved out of assistant history: upstream strips <think> text from assistant
// content when the engine parses reasoning, and passes it back as reasoning_content when the
// model interleaves reasoning with tool calls.
void move_reasoning_out_of_history(json::array& messages, bool interleaved) {
  for (auto& mv : messages) {
    auto* m = mv.if_object();
    if (!m || !m->contains("content")) continue;
    const auto* role = m->if_contains("role");
    if (!role || !role->is_string() || role->get_string() != "assistant") continue;
    auto& content = m->at("content");
    std::optional<std::string> reasoning;
    if (content.is_string()) {
      auto split = split_think_tags(content.get_string());
      content = json::string(split.rest);
      if (!split.reasoning.empty()) reasoning = split.reasoning.front();
    } else if (auto* parts = content.if_array()) {
      for (auto& p : *parts) {
        auto* po = p.if_object();
        const auto* text = po ? po->if_contains("text") : nullptr;
        if (!text || !text->is_string()) continue;
        auto split = split_think_tags(text->get_string());
        if (!split.reasoning.empty() && reasoning)
          throw ConversionError("an assistant message has reasoning in more than one part");
        po->at("text") = json::string(split.rest);
        if (!split.reasoning.empty()) reasoning = split.reasoning.front();
      }
    }
    if (reasoning && interleaved) {
      (*m)["reasoning_content"] = *reasoning;
      (*m)["reasoning"] = *reasoning;
    }
  }
}

// "token_id:<n>" tokens and their logprobs from choice.logprobs.content (vLLM with
// return_tokens_as_token_ids).
std::pair<json::array, json::array> logprob_tokens(const json::object& choice) {
  const auto* block = choice.if_contains("logprobs");
  const auto* content =
      block && block->is_object() ? block->get_object().if_contains("content") : nullptr;
  if (!content || !content->is_array())
    throw ConversionError(
        "return_token_id_information asks the endpoint for per-token logprobs (logprobs=true, "
        "top_logprobs=0, return_tokens_as_token_ids=true) but the answer had none: is it vLLM?");
  json::array ids, logprobs;
  std::size_t i = 0;
  for (const auto& entry : content->get_array()) {
    const auto* e = entry.if_object();
    const std::string where = "choice.logprobs.content[" + std::to_string(i++) + "]";
    const auto* token = e ? e->if_contains("token") : nullptr;
    constexpr std::string_view kPrefix = "token_id:";
    if (!token || !token->is_string() || !token->get_string().starts_with(kPrefix))
      throw ConversionError(where + ".token must use the `token_id:<int>` format");
    std::string_view digits = std::string_view(token->get_string()).substr(kPrefix.size());
    std::int64_t id = 0;
    try {
      std::size_t used = 0;
      id = std::stoll(std::string(digits), &used);
      if (used != digits.size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      throw ConversionError(where + ".token must use the `token_id:<int>` format");
    }
    const auto* lp = e->if_contains("logprob");
    if (!lp || !lp->is_number() || lp->is_bool())
      throw ConversionError(where + ".logprob must be numeric");
    ids.push_back(id);
    logprobs.push_back(lp->to_number<double>());
  }
  return {std::move(ids), std::move(logprobs)};
}

// At most one on-policy warning per this interval per process; the next one counts the rest.
constexpr std::chrono::seconds kBreakLogInterval{10};
// Likewise for calls the endpoint refused as too long for the model's context.
constexpr std::chrono::seconds kContextLogInterval{10};

// The error text of an endpoint's answer: vLLM's {"message": ...} or OpenAI's {"error":
// {"message": ...}}, else the body as it came (the key already masked).
std::string error_text(const std::string& body) {
  boost::system::error_code ec;
  const json::value v = core::parse_json(body, ec);
  const auto* o = ec ? nullptr : v.if_object();
  if (o && o->contains("error") && o->at("error").is_object()) o = &o->at("error").get_object();
  if (const auto* m = o ? o->if_contains("message") : nullptr; m && m->is_string())
    return std::string(m->get_string());
  return body.substr(0, 1000);
}

// Who a turn belongs to, for the on-policy messages: the rollout when the request names it
// (/ng-rollout/<id>/), else the model server's session (one per rollout's conversation).
std::string turn_owner(const Request& req) {
  if (!req.trace.rollout_id.empty()) return "rollout " + req.trace.rollout_id;
  if (!req.session_id.empty()) return "session " + req.session_id;
  return "a request without a session";
}

struct VllmServer {
  servers::ServerContext& ctx;
  VllmModelConfig config;
  std::vector<UpstreamEndpoint> endpoints;
  std::shared_ptr<LogRateLimit> break_log = std::make_shared<LogRateLimit>(kBreakLogInterval);
  std::shared_ptr<LogRateLimit> context_log = std::make_shared<LogRateLimit>(kContextLogInterval);

  const UpstreamEndpoint& endpoint_of(const Request& req) const {
    return endpoints[endpoint_for_session(req.session_id, endpoints.size())];
  }

  // POST /chat/completions of the session's endpoint, then the answer as upstream shapes it.
  // `too_long`: set to the endpoint's message when it refused the conversation as too long for
  // the model's context (the answer is then an empty completion cut off by length).
  asio::awaitable<json::object> chat(const Request& req, json::object body,
                                     std::string* too_long = nullptr) {
    body = vllm_chat_body(config, std::move(body));
    if (!config.sequential_reasoning_allowed) {
      const auto& messages = body.at("messages").as_array();
      if (!messages.empty()) {
        const auto& last = messages.back().as_object();
        const auto* content = last.if_contains("content");
        const bool empty_content = !content || content->is_null() ||
                                   (content->is_string() && content->get_string().empty());
        if (last.contains("role") && last.at("role") == "assistant" && empty_content &&
            !last.contains("tool_calls"))
          co_return empty_completion(config.model, "content_filter");
      }
    }
    const auto& endpoint = endpoint_of(req);
    json::object completion;
    try {
      completion =
          co_await post_upstream(*ctx.client, endpoint, "/chat/completions", body, req.trace);
    } catch (const UpstreamError& e) {
      // vLLM says 400 when the prompt no longer fits: the turn ends as cut off, like upstream,
      // so the rollout is still verified; the endpoint's words go to the log and the Response.
      if (!is_context_length_error(e.status(), e.body())) throw;
      const std::string message = error_text(e.body());
      note_too_long(message);
      if (too_long) *too_long = message;
      co_return empty_completion(config.model, "length");
    }
    co_await shape_answer(req, endpoint, body, completion);
    if (config.return_token_id_information) check_on_policy(req, body, completion);
    co_return completion;
  }

  // A rate-limited warning: a max_output_tokens too large for the model fails every long
  // conversation, and the rows alone would only say "incomplete".
  void note_too_long(const std::string& message) {
    const auto held = context_log->admit(LogRateLimit::Clock::now());
    if (!held) return;
    spdlog::warn(
        "vllm_model {}: the endpoint refused {} as too long for the model's context{}: {}; lower "
        "max_output_tokens (--max-output-tokens) or shorten the input",
        ctx.instance.name, *held ? fmt::format("{} calls", *held + 1) : std::string("a call"),
        *held ? fmt::format(" in the last {} s", kContextLogInterval.count()) : std::string(),
        message);
  }

  // The on-policy check: this turn's prompt ids must extend the previous turn's prompt and
  // generation ids (models/token_contiguity.h). A break is counted and logged (rate-limited);
  // with on_token_contiguity_break: fail the turn fails with a 400 saying what broke.
  void check_on_policy(const Request& req, const json::object& body,
                       const json::object& completion) {
    const auto* messages = body.if_contains("messages");
    const auto& choice = completion.at("choices").get_array()[0].get_object();
    const auto* prompt = choice.at("message").get_object().if_contains("prompt_token_ids");
    if (!messages || !messages->is_array() || !prompt) return;
    const auto found = find_token_contiguity_break(messages->get_array(), *prompt);
    if (!found) return;
    if (ctx.metrics) ctx.metrics->record_token_contiguity_break();
    const bool fail = config.on_token_contiguity_break == ContiguityBreakAction::fail;
    if (const auto held = break_log->admit(LogRateLimit::Clock::now()))
      spdlog::warn(
          "vllm_model {}: on-policy check: {} breaks at token {}: {} (counted in "
          "gym.model.token_contiguity.breaks; on_token_contiguity_break: {}){}",
          ctx.instance.name, turn_owner(req), found->token_index, found->description,
          fail ? "fail, the turn fails" : "warn",
          *held ? fmt::format("; {} more in the last {} s were not logged", *held,
                              kBreakLogInterval.count())
                : std::string());
    if (fail)
      throw ConversionError("on-policy check: " + turn_owner(req) + " breaks at token " +
                            std::to_string(found->token_index) + ": " + found->description +
                            " (on_token_contiguity_break: fail)");
  }

  asio::awaitable<void> shape_answer(const Request& req, const UpstreamEndpoint& endpoint,
                                     const json::object& body, json::object& completion) {
    auto* choices = completion.if_contains("choices");
    if (!choices || !choices->is_array() || choices->get_array().empty() ||
        !choices->get_array()[0].is_object())
      throw UpstreamError(
          "model endpoint " + endpoint.url("/chat/completions") + " answered without choices", 200,
          "");
    auto& choice = choices->get_array()[0].get_object();
    auto* mv = choice.if_contains("message");
    if (!mv || !mv->is_object())
      throw UpstreamError("model endpoint " + endpoint.url("/chat/completions") +
                              " answered a choice without a message",
                          200, "");
    auto& message = mv->get_object();
    auto text_of = [&](std::string_view key) -> std::string {
      const auto* v = message.if_contains(key);
      return v && v->is_string() ? std::string(v->get_string()) : std::string();
    };
    std::string reasoning = text_of("reasoning_content");
    if (reasoning.empty()) reasoning = text_of("reasoning");
    if (config.uses_reasoning_parser) {
      if (!reasoning.empty()) {
        message.erase("reasoning_content");
        message.erase("reasoning");
        message["content"] = wrap_in_think_tags({reasoning}) + text_of("content");
      }
    } else if (!reasoning.empty()) {
      throw UpstreamError(
          "model endpoint " + endpoint.url("/chat/completions") +
              " answered with reasoning_content, but this server is configured with "
              "uses_reasoning_parser: false; start vLLM without a reasoning parser or set "
              "uses_reasoning_parser: true",
          200, "");
    }
    if (config.return_token_id_information)
      co_await attach_token_ids(req, endpoint, body, completion, choice, message);
  }

  asio::awaitable<void> attach_token_ids(const Request& req, const UpstreamEndpoint& endpoint,
                                         const json::object& body, json::object& completion,
                                         json::object& choice, json::object& message) {
    const bool message_has_ids = message.contains("prompt_token_ids") ||
                                 message.contains("generation_token_ids") ||
                                 message.contains("generation_log_probs");
    const auto* prompt = completion.if_contains("prompt_token_ids");
    const auto* generated = choice.if_contains("token_ids");
    const bool prompt_present = prompt && !prompt->is_null();
    const bool generated_present = generated && !generated->is_null();
    if (prompt_present != generated_present)
      throw ConversionError(std::string("the endpoint returned partial token ids; missing ") +
                            (prompt_present ? "choice.token_ids" : "prompt_token_ids"));
    if (!message_has_ids) {
      auto [ids, logprobs] = logprob_tokens(choice);
      json::value prompt_ids;
      if (prompt_present) {
        if (generated->as_array() != ids)
          throw ConversionError("the endpoint's token_ids disagree with its logprob tokens");
        prompt_ids = *prompt;
      } else {
        json::object tokenize;
        for (auto key : {"model", "messages", "tools", "chat_template_kwargs",
                         "mm_processor_kwargs", "required_prefix_token_ids"})
          if (const auto* v = body.if_contains(key)) tokenize[key] = *v;
        UpstreamEndpoint root = endpoint;
        if (root.base_url.ends_with("/v1")) root.base_url.resize(root.base_url.size() - 3);
        auto answer = co_await post_upstream(*ctx.client, root, "/tokenize", tokenize, req.trace);
        const auto* tokens = answer.if_contains("tokens");
        if (!tokens || !tokens->is_array())
          throw ConversionError("the endpoint's /tokenize answer has no `tokens` list");
        prompt_ids = *tokens;
      }
      if (ids.size() != logprobs.size())
        throw ConversionError("generation token ids and logprobs differ in length");
      message["prompt_token_ids"] = std::move(prompt_ids);
      message["generation_token_ids"] = std::move(ids);
      message["generation_log_probs"] = std::move(logprobs);
      choice.erase("logprobs");
    }
    completion.erase("prompt_token_ids");
    choice.erase("token_ids");
  }

  asio::awaitable<Response> responses(Request& req, json::object& params) {
    try {
      if (config.is_responses_native) co_return co_await responses_native(req, params);
      auto chat_params = responses_to_chat_params(params, config.conversion());
      std::string too_long;
      auto completion = co_await chat(req, std::move(chat_params), &too_long);
      params["model"] = config.model;
      auto response = chat_completion_to_response(params, completion, config.conversion());
      // The Response's own error field (null otherwise): the row then says why it is empty.
      if (!too_long.empty())
        response["error"] =
            json::object{{"code", "context_length_exceeded"}, {"message", std::move(too_long)}};
      co_return Response::json(response);
    } catch (const ConversionError& e) {
      co_return Response::json(json::string(std::string("vllm_model: ") + e.what()), 400);
    } catch (const UpstreamError& e) {
      co_return upstream_failure(e);
    }
  }

  asio::awaitable<Response> responses_native(Request& req, json::object& params) {
    json::object body = config.extra_body;
    for (const auto& [k, v] : params) body[k] = v;
    body["model"] = config.model;
    if (!config.chat_template_kwargs.empty())
      body["chat_template_kwargs"] = config.chat_template_kwargs;
    for (const auto& [k, v] : config.sampling_overrides) body[k] = v;
    const auto& endpoint = endpoint_of(req);
    auto answer = co_await post_upstream(*ctx.client, endpoint, "/responses", body, req.trace);
    if (auto problem = servers::response_problem(answer))
      throw UpstreamError("model endpoint " + endpoint.url("/responses") +
                              " answered with something that is not a Response: " + *problem,
                          200, "");
    co_return Response::json(answer);
  }

  asio::awaitable<Response> chat_completions(Request& req, json::value& body) {
    try {
      if (auto problem = chat_body_problem(body)) co_return std::move(*problem);
      auto* o = body.if_object();
      co_return Response::json(co_await chat(req, std::move(*o)));
    } catch (const ConversionError& e) {
      co_return Response::json(json::string(std::string("vllm_model: ") + e.what()), 400);
    } catch (const UpstreamError& e) {
      co_return upstream_failure(e);
    }
  }
};

}  // namespace

VllmModelConfig read_vllm_model_config(const core::ServerInstance& instance) {
  InstanceKeys keys(instance);
  for (const auto& [name, why] : kUnsupported) keys.reject_unsupported(name, why);
  VllmModelConfig c;
  for (auto& url : keys.required_strings("base_url", kModelUrlHow))
    c.base_urls.push_back(checked_base_url(std::move(url), keys.key("base_url")));
  c.api_key = keys.string_or("api_key", c.api_key);  // "EMPTY": a local vLLM needs no key
  c.model = keys.required_string("model", kModelNameHow);
  c.return_token_id_information = keys.flag("return_token_id_information", false);
  c.request_prompt_and_generation_token_ids =
      keys.flag("request_prompt_and_generation_token_ids", false);
  c.uses_reasoning_parser = keys.flag("uses_reasoning_parser", true);
  c.uses_interleaved_reasoning = keys.flag("uses_interleaved_reasoning", true);
  c.preserve_reasoning_in_assistant_content =
      keys.flag("preserve_reasoning_in_assistant_content", false);
  c.replace_developer_role_with_system = keys.flag("replace_developer_role_with_system", false);
  c.sequential_reasoning_allowed = keys.flag("sequential_reasoning_allowed", true);
  c.is_responses_native = keys.flag("is_responses_native", false);
  c.chat_template_kwargs = copy_or_empty(keys.mapping("chat_template_kwargs"));
  c.sampling_overrides = copy_or_empty(keys.mapping("sampling_overrides"));
  c.extra_body = copy_or_empty(keys.mapping("extra_body"));
  if (const auto* headers = keys.mapping("default_headers")) c.default_headers = *headers;
  const auto on_break = keys.string_or("on_token_contiguity_break", "warn");
  if (on_break == "fail") {
    c.on_token_contiguity_break = ContiguityBreakAction::fail;
  } else if (on_break != "warn") {
    throw core::ConfigError("config error: " + keys.key("on_token_contiguity_break") +
                            " must be warn or fail (got '" + on_break + "'); e.g. ++" +
                            keys.key("on_token_contiguity_break") + "=fail");
  }
  if (c.is_responses_native) {
    // Upstream raises NotImplementedError on the first request; here it is a startup error.
    for (auto [name, set] :
         {std::pair{"return_token_id_information", c.return_token_id_information},
          std::pair{"replace_developer_role_with_system", c.replace_developer_role_with_system},
          std::pair{"sequential_reasoning_allowed", !c.sequential_reasoning_allowed}})
      if (set)
        throw core::ConfigError("config error: " + keys.key(name) +
                                " does not work with is_responses_native: true (as upstream)");
  }
  return c;
}

json::object vllm_chat_body(const VllmModelConfig& config, json::object body) {
  if (config.replace_developer_role_with_system)
    if (auto* messages = body.if_contains("messages"); messages && messages->is_array())
      for (auto& m : messages->get_array())
        if (auto* mo = m.if_object(); mo && mo->contains("role") && mo->at("role") == "developer")
          (*mo)["role"] = "system";
  body["model"] = config.model;

  json::object metadata;
  if (const auto* md = body.if_contains("metadata"); md && md->is_object())
    metadata = md->get_object();
  json::object template_kwargs = config.chat_template_kwargs;
  for (auto& [k, v] : metadata_json(metadata, "chat_template_kwargs")) template_kwargs[k] = v;
  if (!template_kwargs.empty()) body["chat_template_kwargs"] = std::move(template_kwargs);
  json::object extra = config.extra_body;
  for (auto& [k, v] : metadata_json(metadata, "extra_body")) extra[k] = v;

  for (auto key : {"audio_data", "audio_path", "audio_paths"})
    if (const auto* v = metadata.if_contains(key); v && !v->is_null())
      throw ConversionError(std::string("metadata.") + key +
                            ": audio inputs are not supported by gym-cpp's vllm_model");

  if (config.return_token_id_information) {
    body["logprobs"] = true;
    body["top_logprobs"] = 0;
    body["return_tokens_as_token_ids"] = true;
    if (config.request_prompt_and_generation_token_ids) body["return_token_ids"] = true;
  }
  if (config.uses_reasoning_parser && !config.preserve_reasoning_in_assistant_content)
    if (auto* messages = body.if_contains("messages"); messages && messages->is_array())
      move_reasoning_out_of_history(messages->get_array(), config.uses_interleaved_reasoning);
  if (const auto* top = body.if_contains("top_logprobs"); top && top->is_null())
    body.erase("top_logprobs");
  // extra_body fills in what the request does not set; the request wins.
  for (auto& [k, v] : extra)
    if (!body.contains(k)) body[k] = v;
  // Pinned sampling wins over everything (on-policy training).
  for (const auto& [k, v] : config.sampling_overrides) body[k] = v;
  if (config.return_token_id_information)
    if (const auto* n = body.if_contains("n");
        n && !n->is_null() && !(n->is_int64() && n->get_int64() == 1))
      throw ConversionError("return_token_id_information needs n=1 (one choice per request)");
  return body;
}

std::size_t endpoint_for_session(std::string_view session_id, std::size_t n) {
  if (n <= 1) return 0;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(session_id.data(), session_id.size(), digest, &size, EVP_sha256(), nullptr);
  std::uint64_t head = 0;
  for (int i = 0; i < 8; ++i) head = (head << 8) | digest[i];
  return static_cast<std::size_t>(head % n);
}

void register_vllm_model(servers::Registry& registry) {
  registry.add({
      "responses_api_models",
      "vllm_model",
      "VLLMModel",
      [](servers::ServerContext& ctx, http::Router& router) {
        auto server =
            std::make_shared<VllmServer>(VllmServer{ctx, read_vllm_model_config(ctx.instance), {}});
        for (const auto& url : server->config.base_urls) {
          server->endpoints.push_back(UpstreamEndpoint{
              url,
              "",
              endpoint_headers(server->config.api_key, &server->config.default_headers),
              server->config.api_key,
              nullptr,
              {}});
          apply_call_settings(server->endpoints.back(), ctx.global);
        }
        if (!server->config.sampling_overrides.empty())
          spdlog::info("vllm_model: {} pins sampling on every request: {}", ctx.instance.name,
                       core::render_json(server->config.sampling_overrides));
        add_model_routes(ctx, server, router);
      },
  });
}

}  // namespace gym::models
