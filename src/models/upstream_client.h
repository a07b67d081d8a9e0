#pragma once
// The calls a live model server makes to its OpenAI-compatible endpoint (vLLM, OpenAI, Azure, a
// gateway): JSON POSTs through the process's HTTP client as external calls (429/5xx retried
// within the retry budget: docs/design/failures-and-retries.md#model-endpoints), and the answer a
// failed call gives our caller. The API key travels only in the request headers: it is never part
// of a message.
#include "core/secrets.h"
#include "http/client.h"
#include "http/endpoint_health.h"
#include "http/message.h"

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gym::models {

// A long completion with logprobs and token ids is several MB; an endless one is cut here.
inline constexpr std::uint64_t kDefaultModelResponseMaxBytes = 64ull << 20;

struct UpstreamEndpoint {
  std::string base_url;               // e.g. https://api.openai.com/v1 (no trailing slash)
  std::string query;                  // appended to every URL, e.g. "?api-version=2024-10-21"
  std::vector<http::Header> headers;  // authentication and the configured default headers
  std::string secret;                 // the API key, masked if an endpoint echoes it back
  // Shared by every call of the process (copies share it): whether the endpoint is up.
  std::shared_ptr<http::EndpointHealth> health;
  std::chrono::milliseconds call_timeout{0};  // model_call_timeout_seconds; zero: none
  // model_response_max_bytes: the longest answer body taken from the endpoint; zero: no limit.
  std::uint64_t max_response_bytes = kDefaultModelResponseMaxBytes;

  std::string url(std::string_view path) const { return base_url + std::string(path) + query; }
};

// The endpoint's call settings from the global config: its health tracker
// (model_endpoint_unavailable_seconds, default 60, 0 = never unavailable) and the timeout of one
// attempt (model_call_timeout_seconds, default 0 = none) and the longest answer body
// (model_response_max_bytes, default 64 MiB, 0 = no limit). A ConfigError names a bad value.
void apply_call_settings(UpstreamEndpoint& endpoint, const boost::json::object& global);

// A 400 that says the conversation does not fit the model's context (vLLM: "maximum context
// length", OpenAI: context_length_exceeded; upstream also takes "max_tokens"). vllm_model ends
// such a turn as cut off instead of failing it.
bool is_context_length_error(int status, std::string_view body);

// An endpoint's final non-2xx answer, no answer at all (status 0), or the endpoint declared
// unavailable. what() says which URL, what it answered and what to check, without the key:
// "model endpoint <url> gave no answer: ...", "... answered HTTP <status>: ..." or "... is
// unavailable: ..." (the collector tells them apart by these words).
class UpstreamError : public std::runtime_error {
 public:
  // The message's URLs are shown without their passwords and keys (core::masked_urls_in).
  UpstreamError(const std::string& message, int status, std::string body, bool unavailable = false)
      : std::runtime_error(core::masked_urls_in(message)),
        status_(status),
        body_(std::move(body)),
        unavailable_(unavailable) {}
  int status() const { return status_; }             // 0: no response (refused, timeout, budget)
  const std::string& body() const { return body_; }  // the endpoint's body, key masked
  bool unavailable() const { return unavailable_; }  // EndpointHealth gave up on the endpoint

 private:
  int status_;
  std::string body_;
  bool unavailable_;
};

// POST `body` to endpoint.url(path) and return the answer's JSON object. Throws UpstreamError.
// `trace`: the handler's (http::Request::trace), so the call is a child of its span.
boost::asio::awaitable<boost::json::object> post_upstream(http::HttpClient& client,
                                                          const UpstreamEndpoint& endpoint,
                                                          std::string_view path,
                                                          const boost::json::value& body,
                                                          const telemetry::TraceContext& trace);

// The same call, answering with the endpoint's raw body and status (forwarded routes).
boost::asio::awaitable<http::ClientResponse> post_upstream_raw(
    http::HttpClient& client, const UpstreamEndpoint& endpoint, std::string_view path,
    const boost::json::value& body, const telemetry::TraceContext& trace);

// What our route answers when the endpoint failed: the endpoint's 4xx status (so an OpenAI
// client sees the same error class), 503 when the endpoint is unavailable, 502 for 5xx, for a
// 429 that outlasted the retry budget and for no answer; a JSON string body
// naming the URL and status, with the hint for the common mistakes (bad key, unknown model,
// context too long).
http::Response upstream_failure(const UpstreamError& e);

// Why a POST /v1/chat/completions body cannot be forwarded, as the 422 upstream's schema gives:
// `messages` missing or not a list, or `stream: true` (not supported). None when it can.
std::optional<http::Response> chat_body_problem(const boost::json::value& body);

// The headers of one endpoint: `Authorization: Bearer <key>` (or `<key_header>: <key>`) and
// the default headers of the config.
std::vector<http::Header> endpoint_headers(const std::string& api_key,
                                           const boost::json::value* default_headers,
                                           const std::string& key_header = "Authorization");

}  // namespace gym::models
