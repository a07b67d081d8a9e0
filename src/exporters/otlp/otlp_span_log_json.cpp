#include "exporters/otlp/otlp_span_log_json.h"

#include <boost/json.hpp>

#include "exporters/otlp/otlp_json.h"

namespace gym::exporters {
namespace json = boost::json;
using telemetry::Attribute;
using telemetry::AttributeValue;
using telemetry::SpanData;

namespace {

json::string u64(std::uint64_t v) { return json::string(std::to_string(v)); }

json::value plain(const AttributeValue& v) {
  switch (v.index()) {
    case 0:
      return json::string(std::get<std::string>(v));
    case 1:
      return std::get<bool>(v);
    case 2:
      return std::get<std::int64_t>(v);
    default:
      return std::get<double>(v);
  }
}

json::object otlp_span(const SpanData& s) {
  json::object o;
  o["traceId"] = telemetry::to_hex(s.trace_id);
  o["spanId"] = telemetry::to_hex(s.span_id);
  if (!telemetry::is_zero(s.parent_span_id))
    o["parentSpanId"] = telemetry::to_hex(s.parent_span_id);
  if (!s.trace_state.empty()) o["traceState"] = s.trace_state;
  o["flags"] = s.sampled ? 1 : 0;
  o["name"] = s.name;
  o["kind"] = static_cast<int>(s.kind);
  o["startTimeUnixNano"] = u64(s.start_time_unix_nano);
  o["endTimeUnixNano"] = u64(s.end_time_unix_nano);
  o["attributes"] = otlp_attributes({s.attributes.data(), s.attributes.size()});
  json::array events;
  for (const auto& e : s.events) {
    events.push_back(json::object{{"timeUnixNano", u64(e.time_unix_nano)},
                                  {"name", e.name},
                                  {"attributes", otlp_attributes(e.attributes)}});
  }
  o["events"] = std::move(events);
  json::object status;
  if (s.status != telemetry::StatusCode::unset) status["code"] = static_cast<int>(s.status);
  if (!s.status_message.empty()) status["message"] = s.status_message;
  o["status"] = std::move(status);
  return o;
}

}  // namespace

namespace {

template <class Attributes>
json::object plain_object(const Attributes& attributes) {
  json::object out;
  for (const auto& a : attributes) out[std::string_view(a.key)] = plain(a.value);
  return out;
}

}  // namespace

json::object plain_attributes(std::span<const Attribute> attributes) {
  return plain_object(attributes);
}
json::object plain_attributes(std::span<const telemetry::SpanAttribute> attributes) {
  return plain_object(attributes);
}

json::value otlp_trace_json(const telemetry::Resource& resource,
                            const telemetry::InstrumentationScope& scope,
                            telemetry::SpanBatch spans) {
  json::array list;
  list.reserve(spans.size());
  for (const auto& s : spans) list.push_back(otlp_span(*s));
  json::object scope_spans{
      {"scope", json::object{{"name", scope.name}, {"version", scope.version}}},
      {"spans", std::move(list)}};
  json::object resource_spans{
      {"resource",
       json::object{{"attributes", otlp_attributes(std::span<const Attribute>(
                                       resource.attributes.begin(), resource.attributes.end()))}}},
      {"scopeSpans", json::array{std::move(scope_spans)}}};
  return json::object{{"resourceSpans", json::array{std::move(resource_spans)}}};
}

json::value otlp_logs_json(const telemetry::Resource& resource,
                           const telemetry::InstrumentationScope& scope,
                           std::span<const telemetry::LogRecordData> records) {
  json::array list;
  list.reserve(records.size());
  for (const auto& r : records) {
    json::object o;
    o["timeUnixNano"] = u64(r.time_unix_nano);
    o["observedTimeUnixNano"] = u64(r.observed_time_unix_nano);
    o["severityNumber"] = r.severity_number;
    o["severityText"] = r.severity_text;
    o["body"] = json::object{{"stringValue", r.body}};
    json::array attributes;
    if (!r.logger.empty())
      attributes.push_back(
          json::object{{"key", "logger.name"}, {"value", json::object{{"stringValue", r.logger}}}});
    o["attributes"] = std::move(attributes);
    if (!telemetry::is_zero(r.trace_id)) {
      o["traceId"] = telemetry::to_hex(r.trace_id);
      o["spanId"] = telemetry::to_hex(r.span_id);
      o["flags"] = r.sampled ? 1 : 0;
    }
    list.push_back(std::move(o));
  }
  json::object scope_logs{{"scope", json::object{{"name", scope.name}, {"version", scope.version}}},
                          {"logRecords", std::move(list)}};
  json::object resource_logs{
      {"resource",
       json::object{{"attributes", otlp_attributes(std::span<const Attribute>(
                                       resource.attributes.begin(), resource.attributes.end()))}}},
      {"scopeLogs", json::array{std::move(scope_logs)}}};
  return json::object{{"resourceLogs", json::array{std::move(resource_logs)}}};
}

json::object console_span(const SpanData& s, const json::object& resource_attributes) {
  json::object o;
  o["trace_id"] = telemetry::to_hex(s.trace_id);
  o["span_id"] = telemetry::to_hex(s.span_id);
  o["parent_span_id"] =
      telemetry::is_zero(s.parent_span_id) ? std::string() : telemetry::to_hex(s.parent_span_id);
  o["name"] = s.name;
  o["kind"] = std::string(telemetry::to_string(s.kind));
  o["start_time_unix_nano"] = s.start_time_unix_nano;
  o["end_time_unix_nano"] = s.end_time_unix_nano;
  json::object status{{"code", std::string(telemetry::to_string(s.status))}};
  if (!s.status_message.empty()) status["message"] = s.status_message;
  o["status"] = std::move(status);
  o["attributes"] = plain_attributes({s.attributes.data(), s.attributes.size()});
  json::array events;
  for (const auto& e : s.events) {
    events.push_back(json::object{{"name", e.name},
                                  {"time_unix_nano", e.time_unix_nano},
                                  {"attributes", plain_attributes(e.attributes)}});
  }
  o["events"] = std::move(events);
  o["resource"] = resource_attributes;
  return o;
}

}  // namespace gym::exporters
