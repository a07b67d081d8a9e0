#pragma once
// A batch of spans as the protobuf bytes of an OTLP ExportTraceServiceRequest, written straight
// from SpanData (issue 14's overhead goal). Building libprotobuf messages first cost about 640 ns a
// span (an arena object and a copy for every id, name and attribute, then a size pass and a write
// pass over the messages); this computes each span's size once and writes every field into one
// buffer. The bytes are those libprotobuf writes for the same request (fields in number order,
// proto3 defaults left out), which tests/unit/exporters/otlp_span_proto_test.cpp holds it to.
#include <span>
#include <string>

#include "telemetry/metrics/metric_data.h"
#include "telemetry/traces/span_data.h"

namespace gym::exporters {

// One ResourceSpans (`resource`) with one ScopeSpans (`scope`) holding `spans` in order.
std::string encode_spans_protobuf(const telemetry::Resource& resource,
                                  const telemetry::InstrumentationScope& scope,
                                  telemetry::SpanBatch spans);

}  // namespace gym::exporters
