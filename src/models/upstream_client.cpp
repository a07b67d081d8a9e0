#include "models/upstream_client.h"

#include "core/config.h"
#include "core/json_text.h"
#include "core/secrets.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <strings.h>

namespace gym::models {
namespace asio = boost::asio;
namespace json = boost::json;

namespace {

constexpr std::size_t kBodyInMessage = 1000;  // enough for any endpoint's error text
constexpr double kUnavailableSecondsDefault = 60;

// `text` without the key, however the endpoint escaped it when it echoed it back.
std::string masked(const std::string& text, const std::string& secret) {
  return core::masked_secret(text, secret);
}

std::string hint(int status, std::string_view body) {
  if (status == 401 || status == 403)
    return "the endpoint rejected the API key: check policy_api_key (--model-api-key)";
  if (status == 404)
    return "the endpoint does not know this model or path: check policy_model_name (--model) "
           "and policy_base_url (--model-url; OpenAI-compatible base URLs usually end in /v1)";
  if (is_context_length_error(status, body))
    return "the conversation does not fit the model's context window: lower max_output_tokens "
           "(--max-output-tokens) or shorten the input";
  // What reaches here was not retried further (a 429 or 503 that outlasted the retry budget
  // has its own hint: budget_hint).
  if (status == 500)
    return fmt::format("tried {} times, the endpoint failed every time; see its log",
                       http::RetryPolicy::kExternalMaxTries);
  if (status > 500) return "not retried: only 500, 502, 503, 504 and 520 are";
  return {};
}

// A retried status that outlasted the retry budget.
std::string budget_hint(const http::RetryBudgetError& e) {
  return fmt::format(
      "retry budget exhausted: retried for {:g} s over {} attempts "
      "(global_http_retry_budget_seconds={:g}); the endpoint is {}",
      e.seconds(), e.attempts(), e.seconds(),
      e.last().status == 429 ? "rate limiting us: lower the concurrency or raise its limits"
                             : "overloaded or down");
}

// "model endpoint <url> answered HTTP <status>: <body> (<hint>)", the body key masked.
UpstreamError answered(const std::string& url, int status, std::string body,
                       const std::string& secret, const std::string& why) {
  std::string text = masked(std::move(body), secret);
  std::string message = "model endpoint " + url + " answered HTTP " + std::to_string(status) +
                        ": " + text.substr(0, kBodyInMessage);
  if (!why.empty()) message += " (" + why + ")";
  return UpstreamError(std::move(message), status, std::move(text));
}

}  // namespace

bool is_context_length_error(int status, std::string_view body) {
  return status == 400 && (body.find("context length") != std::string_view::npos ||
                           body.find("context_length") != std::string_view::npos ||
                           body.find("maximum context") != std::string_view::npos ||
                           body.find("max_tokens") != std::string_view::npos);
}

void apply_call_settings(UpstreamEndpoint& endpoint, const json::object& global) {
  const auto ms = [](double seconds) {
    return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
  };
  endpoint.health = std::make_shared<http::EndpointHealth>(
      core::masked_url(endpoint.base_url),
      ms(core::get_double(global, "model_endpoint_unavailable_seconds", kUnavailableSecondsDefault,
                          0, 1e9)));
  endpoint.call_timeout = ms(core::get_double(global, "model_call_timeout_seconds", 0, 0, 1e9));
  endpoint.max_response_bytes = static_cast<std::uint64_t>(core::get_int(
      global, "model_response_max_bytes", static_cast<std::int64_t>(kDefaultModelResponseMaxBytes),
      0, std::int64_t{1} << 50));
}

asio::awaitable<http::ClientResponse> post_upstream_raw(http::HttpClient& client,
                                                        const UpstreamEndpoint& endpoint,
                                                        std::string_view path,
                                                        const json::value& body,
                                                        const telemetry::TraceContext& trace) {
  http::ClientRequest req;
  req.trace = trace;
  req.url = endpoint.url(path);
  req.body = core::render_json(body);
  req.headers = endpoint.headers;
  req.kind = http::CallKind::external;
  req.health = endpoint.health.get();
  if (endpoint.call_timeout.count() > 0) {
    req.timeout = endpoint.call_timeout;
    req.timeout_setting = "model_call_timeout_seconds";
  }
  req.max_response_bytes = endpoint.max_response_bytes;
  req.max_response_setting = "model_response_max_bytes";
  try {
    co_return co_await client.request(std::move(req));
  } catch (const http::EndpointUnavailableError& e) {
    throw UpstreamError("model endpoint " + endpoint.url(path) +
                            " is unavailable: " + masked(e.what(), endpoint.secret),
                        0, "", /*unavailable=*/true);
  } catch (const http::RetryBudgetError& e) {
    throw answered(endpoint.url(path), e.last().status, e.last().body, endpoint.secret,
                   budget_hint(e));
  } catch (const http::RequestError& e) {
    throw UpstreamError("model endpoint " + endpoint.url(path) +
                            " gave no answer: " + masked(e.what(), endpoint.secret),
                        0, "");
  }
}

asio::awaitable<json::object> post_upstream(http::HttpClient& client,
                                            const UpstreamEndpoint& endpoint, std::string_view path,
                                            const json::value& body,
                                            const telemetry::TraceContext& trace) {
  auto answer = co_await post_upstream_raw(client, endpoint, path, body, trace);
  const std::string url = endpoint.url(path);
  if (answer.status < 200 || answer.status > 299) {
    const std::string why = hint(answer.status, answer.body);
    throw answered(url, answer.status, std::move(answer.body), endpoint.secret, why);
  }
  boost::system::error_code ec;
  json::value v = core::parse_json(answer.body, ec);
  if (ec || !v.is_object())
    throw UpstreamError("model endpoint " + url + " answered HTTP " +
                            std::to_string(answer.status) +
                            " with a body that is not a JSON object: " +
                            masked(answer.body.substr(0, kBodyInMessage), endpoint.secret),
                        answer.status, "");
  co_return std::move(v.get_object());
}

http::Response upstream_failure(const UpstreamError& e) {
  // A 429 that outlasted the retry budget is the endpoint's overload, not our caller's.
  const int status = e.unavailable()                                              ? 503
                     : e.status() >= 400 && e.status() < 500 && e.status() != 429 ? e.status()
                                                                                  : 502;
  return http::Response::json(json::string(e.what()), status);
}

std::optional<http::Response> chat_body_problem(const json::value& body) {
  auto error = [&](const char* type, const char* field, const char* msg, json::value input) {
    return http::Response::detail(422, json::array{json::object{{"type", type},
                                                                {"loc", json::array{"body", field}},
                                                                {"msg", msg},
                                                                {"input", std::move(input)}}});
  };
  const auto* o = body.if_object();
  if (!o || !o->contains("messages") || !o->at("messages").is_array())
    return error("missing", "messages", "Field required", body);
  if (const auto* stream = o->if_contains("stream");
      stream && stream->is_bool() && stream->get_bool())
    return error("literal_error", "stream", "Input should be False", true);
  return std::nullopt;
}

std::vector<http::Header> endpoint_headers(const std::string& api_key,
                                           const json::value* default_headers,
                                           const std::string& key_header) {
  std::vector<http::Header> headers;
  auto same_name = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
  };
  // The key header wins over a default header of the same name, as upstream's dict merge does.
  if (default_headers && default_headers->is_object())
    for (const auto& [k, v] : default_headers->get_object())
      if (!same_name(k, key_header))
        headers.push_back(
            {std::string(k), v.is_string() ? std::string(v.get_string()) : core::render_json(v)});
  if (key_header == "Authorization")
    headers.push_back({"Authorization", "Bearer " + api_key});
  else
    headers.push_back({key_header, api_key});
  return headers;
}

}  // namespace gym::models
