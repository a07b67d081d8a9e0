#include "servers/handler_span.h"

#include <boost/json.hpp>

namespace gym::servers {
namespace json = boost::json;

std::string rollout_id_of_row(const json::value& value) {
  if (!value.is_object()) return {};
  const json::object& row = value.get_object();
  std::string id;
  if (const auto* explicit_id = row.if_contains("_ng_rollout_id");
      explicit_id && explicit_id->is_string()) {
    id = std::string(explicit_id->get_string());
  } else {
    const auto* task = row.if_contains("_ng_task_index");
    const auto* rollout = row.if_contains("_ng_rollout_index");
    if (!task || !rollout || !task->is_int64() || !rollout->is_int64()) return {};
    id = std::to_string(task->get_int64()) + "-" + std::to_string(rollout->get_int64());
  }
  if (const auto* attempt = row.if_contains("_ng_attempt_index");
      attempt && attempt->is_int64() && attempt->get_int64() > 0)
    id += "-a" + std::to_string(attempt->get_int64());
  return id;
}

HandlerSpan::HandlerSpan(const ServerContext& ctx, telemetry::SpanGroup group,
                         std::string_view name, http::Request& req, std::string rollout_id) {
  if (!rollout_id.empty()) req.trace.rollout_id = std::move(rollout_id);
  if (!ctx.tracer || !ctx.tracer->on(group)) return;
  span_ = ctx.tracer->start(std::string(name), telemetry::SpanKind::internal, req.trace.span);
  if (span_.recording()) {
    span_.set_attribute("nemo.gym.server.name", ctx.instance.name);
    if (!req.trace.rollout_id.empty())
      span_.set_attribute("nemo.gym.rollout.id", req.trace.rollout_id);
  }
  span_.enter(req.trace);
}

}  // namespace gym::servers
