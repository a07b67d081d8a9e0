#pragma once
// What every agent server shares (docs/design/wire-compatibility.md#server-kinds-and-routes):
// liveness, and the error an agent answers when a downstream Gym call fails.
#include "http/client.h"
#include "http/router.h"
#include "servers/registry.h"

#include <stdexcept>
#include <string>
#include <string_view>

namespace gym::servers {

void add_agent_base_routes(http::Router& router);

// Schema of every /run body: a row with its `responses_create_params` (an object, required).
std::shared_ptr<const http::Schema> run_request_schema();

// POST /run with `rollout` behind `schema`, timed for gym.rollout.duration_ms
// (docs/design/telemetry-contract.md#metrics): every call that passed validation is one sample,
// from handler entry to exit, failed and cut-off ones included. Every agent serves /run through
// this, so none can forget the metric.
void add_run_route(ServerContext& ctx, http::Router& router, http::JsonHandler rollout,
                   std::shared_ptr<const http::Schema> schema = run_request_schema());

// A downstream Gym call that answered non-2xx inside a handler
// (docs/design/wire-compatibility.md#error-statuses-and-bodies).
class DownstreamError : public std::runtime_error {
 public:
  // `target`: the call that failed, "<instance> POST <route>" (empty when unknown).
  DownstreamError(int status, std::string body, std::string target = {})
      : std::runtime_error("HTTP " + std::to_string(status)),
        status_(status),
        body_(std::move(body)),
        target_(std::move(target)) {}
  int status() const { return status_; }
  const std::string& body() const { return body_; }
  const std::string& target() const { return target_; }

 private:
  int status_;
  std::string body_;
  std::string target_;
};

// 500 with the JSON string "Hit an exception in <cookie name> calling an inner server:
// <instance> POST <route>: <status> <downstream body>". NeMo Gym's wording has no
// "<instance> POST <route>: "; the call is named so that a Python server's 500 or missing route
// is not taken for the agent's own failure.
http::Response downstream_failure(const std::string& cookie_name, const DownstreamError& e);

// Throws DownstreamError unless `r` is 2xx; `instance` and `route` name the call in it.
void require_success(const http::ClientResponse& r, std::string_view instance = {},
                     std::string_view route = {});

}  // namespace gym::servers
