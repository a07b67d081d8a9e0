#pragma once
// What every exporter (metrics, spans, log records) answers, and by when it must.
#include <chrono>

namespace gym::telemetry {

enum class ExportResult { success, failure };

using Deadline = std::chrono::steady_clock::time_point;

}  // namespace gym::telemetry
