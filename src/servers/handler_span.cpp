#include "servers/handler_span.h"

#include <boost/json.hpp>

namespace gym::servers {
namespace json = boost::json;

HandlerSpan::HandlerSpan(const ServerContext& ctx, telemetry::SpanGroup group,
                         std::string_view name, http::Request& req, const json::value* row) {
  if (!ctx.tracer) return;
  const bool spanned = ctx.tracer->on(group);
  // The id is read from the row only when a span will carry it, this one or the CLIENT spans of
  // the handler's calls (nothing is built for a group that is off).
  if (row && row->is_object() && (spanned || ctx.tracer->on(telemetry::SpanGroup::http_client))) {
    if (auto id = telemetry::rollout_id_of_row(row->get_object()); !id.empty())
      req.trace.rollout_id = std::move(id);
  }
  if (!spanned) return;
  span_ = ctx.tracer->start(std::string(name), telemetry::SpanKind::internal, req.trace.span);
  if (span_.recording()) {
    span_.set_attribute("nemo.gym.server.name", ctx.instance.name);
    if (!req.trace.rollout_id.empty())
      span_.set_attribute("nemo.gym.rollout.id", req.trace.rollout_id);
  }
  span_.enter(req.trace);
}

}  // namespace gym::servers
