#pragma once
// The logs of a process as OTLP log records (docs/reference/telemetry.md#logs, issue 14): with
// `logs_enabled`, every record the process logs at INFO and above (spdlog's default logger) also
// goes to a batch processor with the OTEL_BLRP_* settings, beside stdout. A record logged while a
// ScopedLogTrace is alive on its thread carries that span's trace and span ids; handlers put one
// around the log lines they write for a request (the runtime is coroutine-based, so there is no
// implicit "current span" to read).
//
// Thread-safety: any thread may log; install and detach once each, from the owning thread.
#include <chrono>
#include <memory>

#include "telemetry/common/batch_processor.h"
#include "telemetry/logs/log_record.h"
#include "telemetry/traces/trace_context.h"

namespace gym::telemetry {

using LogExporter = BatchExporter<LogRecordData>;

class LogBridge {
 public:
  // Starts the processor and adds the sink to spdlog's default logger.
  LogBridge(std::unique_ptr<LogExporter> exporter, BatchSettings settings,
            std::chrono::milliseconds log_interval);
  ~LogBridge();  // shutdown()
  LogBridge(const LogBridge&) = delete;
  LogBridge& operator=(const LogBridge&) = delete;

  bool force_flush(std::chrono::milliseconds wait);
  // The sink stops forwarding (it stays installed, inert), then the queue is exported.
  bool shutdown(std::chrono::milliseconds wait);
  BatchProcessor<LogRecordData>::Stats stats() const;

  class Sink;

 private:
  std::unique_ptr<BatchProcessor<LogRecordData>> records_;
  std::shared_ptr<Sink> sink_;
};

// While alive, records logged on this thread carry `context`'s ids (when it is valid).
class ScopedLogTrace {
 public:
  explicit ScopedLogTrace(const SpanContext& context) noexcept;
  ~ScopedLogTrace();
  ScopedLogTrace(const ScopedLogTrace&) = delete;
  ScopedLogTrace& operator=(const ScopedLogTrace&) = delete;

 private:
  const SpanContext* previous_;
};

// The OTLP severity of an spdlog level (INFO 9, WARN 13, ERROR 17, FATAL 21; 0 below INFO) and
// its text.
int severity_number(int spdlog_level) noexcept;
const char* severity_text(int spdlog_level) noexcept;

}  // namespace gym::telemetry
