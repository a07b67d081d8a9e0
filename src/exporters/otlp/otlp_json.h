#pragma once
// A snapshot as an OTLP/JSON ExportMetricsServiceRequest (the protobuf JSON mapping of OTLP):
// field names in lowerCamelCase, 64-bit integers (timestamps, counts, int values) as decimal
// strings, enums as integers (aggregationTemporality 2 = cumulative), doubles as numbers.
// Pure functions: no I/O, no shared state. Used by the console exporter and the OTLP/HTTP
// exporter's http/json protocol; otlp_json_decode.h reads it back.
#include <span>
#include <string>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include "telemetry/metrics/metric_data.h"
#include "telemetry/traces/span_data.h"

namespace gym::exporters {

boost::json::value otlp_json(const telemetry::MetricsSnapshot& snapshot);

// The compact text of otlp_json(): one line, no newline at the end.
std::string otlp_json_text(const telemetry::MetricsSnapshot& snapshot);

// The pieces every OTLP/JSON signal shares: an AnyValue ({"stringValue": ...}, intValue as a
// decimal string) and a KeyValue list.
boost::json::value otlp_any_value(const telemetry::AttributeValue& value);
boost::json::array otlp_attributes(std::span<const telemetry::Attribute> attributes);
boost::json::array otlp_attributes(std::span<const telemetry::SpanAttribute> attributes);

}  // namespace gym::exporters
