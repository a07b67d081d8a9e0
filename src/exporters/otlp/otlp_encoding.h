#pragma once
// Snapshot -> OTLP ExportMetricsServiceRequest, as a protobuf message or as the bytes of a
// protocol's payload (otlp_sender.h). Pure functions over the plain-data snapshot: no I/O, no
// shared state.
#include <string>

#include <span>
#include "exporters/otlp/otlp_settings.h"

#include "opentelemetry/proto/collector/logs/v1/logs_service.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "telemetry/logs/log_record.h"
#include "telemetry/metrics/metric_data.h"
#include "telemetry/traces/span_data.h"

namespace gym::exporters {

using ExportMetricsServiceRequest =
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;

// One ResourceMetrics (the snapshot's resource) with one ScopeMetrics (its scope); every
// metric cumulative; histograms carry count, sum, min, max, bucket counts and bounds.
ExportMetricsServiceRequest to_otlp_proto(const telemetry::MetricsSnapshot& snapshot);
// The same, appended to `request` (which may live on a protobuf arena).
void fill_otlp_proto(const telemetry::MetricsSnapshot& snapshot,
                     ExportMetricsServiceRequest& request);

// The request payload for `protocol`: binary protobuf (grpc, http/protobuf) or OTLP/JSON
// (http/json).
std::string encode_request(const telemetry::MetricsSnapshot& snapshot, OtlpProtocol protocol);

using ExportTraceServiceRequest =
    opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
using ExportLogsServiceRequest =
    opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest;

// A batch of spans or log records under one resource and scope as the payload of `protocol`
// (protobuf bytes, or OTLP/JSON for http/json); log records also as the request message. Span
// bytes are written directly (otlp_span_proto.h), not through libprotobuf's messages.
void fill_otlp_proto(const telemetry::Resource& resource,
                     const telemetry::InstrumentationScope& scope,
                     std::span<const telemetry::LogRecordData> records,
                     ExportLogsServiceRequest& request);
std::string encode_request(const telemetry::Resource& resource,
                           const telemetry::InstrumentationScope& scope, telemetry::SpanBatch spans,
                           OtlpProtocol protocol);
std::string encode_request(const telemetry::Resource& resource,
                           const telemetry::InstrumentationScope& scope,
                           std::span<const telemetry::LogRecordData> records,
                           OtlpProtocol protocol);

// The Content-Type of `protocol`'s requests (application/grpc for grpc, which gRPC sets itself).
const char* content_type(OtlpProtocol protocol);

}  // namespace gym::exporters
