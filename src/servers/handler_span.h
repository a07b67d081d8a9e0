#pragma once
// The semantic span of a handler (gym.rollout, gym.verify, gym.agent.responses, gym.model.*),
// beside HandlerTimer: started inside the handler once the rollout id is known, gated by its
// group's bit, a child of the request's SERVER span. While it lives the request's trace is the
// span's, so every call the handler makes is its child; it ends however the scope ends. A 5xx
// answer or an exception sets status ERROR.
#include <exception>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>

#include "http/message.h"
#include "http/router.h"
#include "servers/registry.h"
#include "telemetry/traces/tracer.h"

namespace gym::servers {

class HandlerSpan {
 public:
  // `row`: the row the handler runs, whose rollout id (telemetry::rollout_id_of_row) names this
  // span and the calls the handler makes; null: the request's id, if any.
  HandlerSpan(const ServerContext& ctx, telemetry::SpanGroup group, std::string_view name,
              http::Request& req, const boost::json::value* row = nullptr);
  HandlerSpan(const HandlerSpan&) = delete;
  HandlerSpan& operator=(const HandlerSpan&) = delete;

  void failed(const std::exception& e) {
    span_.record_exception(http::exception_type(e), e.what());
  }
  // The handler's answer: 5xx marks the span as an error.
  void answered(int status) {
    if (status >= 500)
      span_.set_status(telemetry::StatusCode::error, "HTTP " + std::to_string(status));
  }

 private:
  telemetry::Span span_;
};

// `handler(req, body)` answered inside `span`: a 5xx answer or an exception marks it. The
// arguments are references into the caller's frame, which awaits this at once.
template <class Handler, class Body>
boost::asio::awaitable<http::Response> answer_in(HandlerSpan& span, Handler& handler,
                                                 http::Request& req, Body& body) {
  try {
    http::Response res = co_await handler(req, body);
    span.answered(res.status);
    co_return res;
  } catch (const std::exception& e) {
    span.failed(e);
    throw;
  }
}

}  // namespace gym::servers
