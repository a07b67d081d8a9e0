#pragma once
// A finished span as plain data (telemetry.md 8.3): what the processor queues and the exporters
// encode. No behaviour; the tracer fills it.
#include <cstdint>
#include <string>
#include <vector>

#include "telemetry/metrics/attributes.h"
#include "telemetry/traces/trace_context.h"

namespace gym::telemetry {

// OTLP's numbering (Span.SpanKind).
enum class SpanKind : int { internal = 1, server = 2, client = 3 };
// OTLP's numbering (Status.StatusCode).
enum class StatusCode : int { unset = 0, ok = 1, error = 2 };

struct SpanEvent {
  std::string name;
  std::uint64_t time_unix_nano = 0;
  std::vector<Attribute> attributes;
};

struct SpanData {
  TraceId trace_id{};
  SpanId span_id{};
  SpanId parent_span_id{};  // all zero: a root span
  std::string trace_state;
  bool sampled = true;  // exported spans always are; kept for the flags field
  std::string name;
  SpanKind kind = SpanKind::internal;
  std::uint64_t start_time_unix_nano = 0;
  std::uint64_t end_time_unix_nano = 0;
  std::vector<Attribute> attributes;
  std::vector<SpanEvent> events;
  StatusCode status = StatusCode::unset;
  std::string status_message;

  const AttributeValue* attribute(std::string_view key) const noexcept;
};

// "internal", "server", "client" (the console exporter's `kind`, telemetry.md 7.1).
std::string_view to_string(SpanKind kind) noexcept;
std::string_view to_string(StatusCode code) noexcept;

}  // namespace gym::telemetry
