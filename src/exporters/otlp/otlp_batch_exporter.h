#pragma once
// The OTLP exporters of spans and log records: each batch the processor hands over is encoded for
// the protocol (otlp_encoding.h) and sent by the signal's OtlpSender, which retries, counts and
// logs what it drops. One template for both signals.
#include <memory>
#include <span>

#include "exporters/otlp/otlp_sender.h"
#include "telemetry/common/batch_processor.h"
#include "telemetry/logs/log_record.h"
#include "telemetry/metrics/metric_data.h"
#include "telemetry/traces/span_data.h"

namespace gym::exporters {

template <class Record>
class OtlpBatchExporter final : public telemetry::BatchExporter<Record> {
 public:
  // `settings`: resolve_otlp(..., Signal::traces or Signal::logs).
  OtlpBatchExporter(OtlpSettings settings, Signal signal, telemetry::Resource resource,
                    std::chrono::milliseconds log_interval);

  telemetry::ExportResult export_batch(std::span<const Record> records,
                                       telemetry::Deadline deadline) noexcept override;
  void shutdown(telemetry::Deadline deadline) noexcept override;

  OtlpSender::Stats stats() const { return sender_.stats(); }

 private:
  telemetry::Resource resource_;
  telemetry::InstrumentationScope scope_;
  OtlpSender sender_;
};

using OtlpSpanExporter = OtlpBatchExporter<std::unique_ptr<telemetry::SpanData>>;
using OtlpLogExporter = OtlpBatchExporter<telemetry::LogRecordData>;

}  // namespace gym::exporters
