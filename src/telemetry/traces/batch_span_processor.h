#pragma once
// The tracer's span processor: a BatchProcessor of spans with the OTEL_BSP_* settings, queueing
// each span by its pointer (span_data.h).
#include <chrono>
#include <memory>

#include "telemetry/common/batch_processor.h"
#include "telemetry/traces/span_data.h"
#include "telemetry/traces/tracer.h"

namespace gym::telemetry {

using SpanExporter = BatchExporter<std::unique_ptr<SpanData>>;

class BatchSpanProcessor final : public SpanProcessor {
 public:
  using Stats = BatchProcessor<std::unique_ptr<SpanData>>::Stats;

  BatchSpanProcessor(std::unique_ptr<SpanExporter> exporter, BatchSettings settings,
                     std::chrono::milliseconds log_interval = std::chrono::seconds(10))
      : batches_(std::move(exporter), settings, "span", "OTEL_BSP_MAX_QUEUE_SIZE", log_interval) {}

  void on_end(std::unique_ptr<SpanData> span) noexcept override { batches_.push(std::move(span)); }
  bool force_flush(std::chrono::milliseconds wait) noexcept override {
    return batches_.force_flush(wait);
  }
  bool shutdown(std::chrono::milliseconds wait) noexcept override {
    return batches_.shutdown(wait);
  }
  Stats stats() const { return batches_.stats(); }

 private:
  BatchProcessor<std::unique_ptr<SpanData>> batches_;
};

}  // namespace gym::telemetry
