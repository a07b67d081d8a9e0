#pragma once
// Spans and log records as OTLP/JSON: an ExportTraceServiceRequest or ExportLogsServiceRequest with
// one resource and one scope, ids as lowercase hex, times as decimal strings, enums as integers;
// and the console exporter's span lines. Pure functions: no I/O, no shared state.
#include <span>
#include <string>

#include <boost/json/value.hpp>

#include "telemetry/logs/log_record.h"
#include "telemetry/metrics/metric_data.h"
#include "telemetry/traces/span_data.h"

namespace gym::exporters {

boost::json::value otlp_trace_json(const telemetry::Resource& resource,
                                   const telemetry::InstrumentationScope& scope,
                                   telemetry::SpanBatch spans);

boost::json::value otlp_logs_json(const telemetry::Resource& resource,
                                  const telemetry::InstrumentationScope& scope,
                                  std::span<const telemetry::LogRecordData> records);

// One span as the console exporter's line object (docs/reference/telemetry.md#reference): trace_id,
// span_id, parent_span_id (hex, "" for a root), name, kind ("internal", "server", "client"),
// start_time_unix_nano, end_time_unix_nano (numbers), status ({"code": "unset"|"ok"|"error"},
// with "message" when set), attributes and resource (objects of plain values), events
// ([{name, time_unix_nano, attributes}]).
boost::json::object console_span(const telemetry::SpanData& span,
                                 const boost::json::object& resource_attributes);

// The resource's attributes as one object of plain JSON values.
boost::json::object plain_attributes(std::span<const telemetry::Attribute> attributes);
boost::json::object plain_attributes(std::span<const telemetry::SpanAttribute> attributes);

}  // namespace gym::exporters
