#pragma once
// A snapshot as an OTLP/JSON ExportMetricsServiceRequest (the protobuf JSON mapping of OTLP):
// field names in lowerCamelCase, 64-bit integers (timestamps, counts, int values) as decimal
// strings, enums as integers (aggregationTemporality 2 = cumulative), doubles as numbers.
// Pure functions: no I/O, no shared state. Used by the console exporter and the OTLP/HTTP
// exporter's http/json protocol; otlp_json_decode.h reads it back.
#include <string>

#include <boost/json/value.hpp>

#include "telemetry/export/metric_data.h"

namespace gym::exporters {

boost::json::value otlp_json(const telemetry::MetricsSnapshot& snapshot);

// The compact text of otlp_json(): one line, no newline at the end.
std::string otlp_json_text(const telemetry::MetricsSnapshot& snapshot);

}  // namespace gym::exporters
