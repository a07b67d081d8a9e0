#pragma once
// A log record as plain data: what the log bridge queues and the OTLP logs exporter encodes.
#include <cstdint>
#include <string>

#include "telemetry/traces/trace_context.h"

namespace gym::telemetry {

struct LogRecordData {
  std::uint64_t time_unix_nano = 0;           // when the record was made
  std::uint64_t observed_time_unix_nano = 0;  // when the bridge saw it (the same here)
  int severity_number = 0;    // OTLP SeverityNumber: INFO 9, WARN 13, ERROR 17, FATAL 21
  std::string severity_text;  // "INFO", "WARN", "ERROR", "FATAL"
  std::string body;           // the formatted message
  std::string logger;         // the logger's name, when it has one
  TraceId trace_id{};         // zero: no active span
  SpanId span_id{};
  bool sampled = false;
};

}  // namespace gym::telemetry
