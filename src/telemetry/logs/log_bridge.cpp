#include "telemetry/logs/log_bridge.h"

#include <mutex>

#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>

#include "telemetry/common/batch_processor_impl.h"
#include "telemetry/traces/tracer.h"

namespace gym::telemetry {

namespace {
thread_local const SpanContext* current_trace = nullptr;
// Set while this thread forwards a record: a line the processor logs meanwhile (a drop
// warning) goes to the other sinks only, never back into the queue (and never deadlocks).
thread_local bool forwarding = false;
}  // namespace

int severity_number(int level) noexcept {
  switch (level) {
    case spdlog::level::info:
      return 9;
    case spdlog::level::warn:
      return 13;
    case spdlog::level::err:
      return 17;
    case spdlog::level::critical:
      return 21;
    default:
      return 0;
  }
}

const char* severity_text(int level) noexcept {
  switch (level) {
    case spdlog::level::info:
      return "INFO";
    case spdlog::level::warn:
      return "WARN";
    case spdlog::level::err:
      return "ERROR";
    case spdlog::level::critical:
      return "FATAL";
    default:
      return "";
  }
}

ScopedLogTrace::ScopedLogTrace(const SpanContext& context) noexcept : previous_(current_trace) {
  current_trace = context.valid() ? &context : nullptr;
}

ScopedLogTrace::~ScopedLogTrace() { current_trace = previous_; }

// Forwards INFO and above to the processor until detached. Its own mutex guards the processor
// pointer, so detaching waits for a record being forwarded.
class LogBridge::Sink final : public spdlog::sinks::sink {
 public:
  explicit Sink(BatchProcessor<LogRecordData>* records) : records_(records) {}
  void detach() {
    std::lock_guard lock(mutex_);
    records_ = nullptr;
  }

  void log(const spdlog::details::log_msg& msg) override {
    const int severity = severity_number(msg.level);
    if (severity == 0 || forwarding) return;
    LogRecordData r;
    r.time_unix_nano = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(msg.time.time_since_epoch()).count());
    r.observed_time_unix_nano = unix_nanos();
    r.severity_number = severity;
    r.severity_text = severity_text(msg.level);
    r.body.assign(msg.payload.data(), msg.payload.size());
    r.logger.assign(msg.logger_name.data(), msg.logger_name.size());
    if (current_trace) {
      r.trace_id = current_trace->trace_id;
      r.span_id = current_trace->span_id;
      r.sampled = current_trace->sampled;
    }
    forwarding = true;
    {
      std::lock_guard lock(mutex_);
      if (records_) records_->push(std::move(r));
    }
    forwarding = false;
  }
  void flush() override {}
  void set_pattern(const std::string&) override {}  // records carry the message, not a line
  void set_formatter(std::unique_ptr<spdlog::formatter>) override {}

 private:
  std::mutex mutex_;
  BatchProcessor<LogRecordData>* records_;
};

LogBridge::LogBridge(std::unique_ptr<LogExporter> exporter, BatchSettings settings,
                     std::chrono::milliseconds log_interval)
    : records_(std::make_unique<BatchProcessor<LogRecordData>>(
          std::move(exporter), settings, "log record", "OTEL_BLRP_MAX_QUEUE_SIZE", log_interval)),
      sink_(std::make_shared<Sink>(records_.get())) {
  sink_->set_level(spdlog::level::info);
  spdlog::default_logger()->sinks().push_back(sink_);
}

LogBridge::~LogBridge() { shutdown(std::chrono::milliseconds(5000)); }

bool LogBridge::force_flush(std::chrono::milliseconds wait) { return records_->force_flush(wait); }

bool LogBridge::shutdown(std::chrono::milliseconds wait) {
  sink_->detach();
  return records_->shutdown(wait);
}

BatchProcessor<LogRecordData>::Stats LogBridge::stats() const { return records_->stats(); }

// The log records' batch processor (common/batch_processor_impl.h).
template class BatchProcessor<LogRecordData>;

}  // namespace gym::telemetry
