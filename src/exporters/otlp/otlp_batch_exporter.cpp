#include "exporters/otlp/otlp_batch_exporter.h"

#include "exporters/otlp/otlp_encoding.h"
#include "telemetry/metrics/meter_provider.h"

namespace gym::exporters {

template <class Record>
OtlpBatchExporter<Record>::OtlpBatchExporter(OtlpSettings settings, Signal signal,
                                             telemetry::Resource resource,
                                             std::chrono::milliseconds log_interval)
    : resource_(std::move(resource)),
      scope_(telemetry::gym_scope()),
      sender_(std::move(settings), signal, log_interval) {}

template <class Record>
telemetry::ExportResult OtlpBatchExporter<Record>::export_batch(
    std::span<const Record> records, telemetry::Deadline deadline) noexcept {
  std::string payload;
  try {
    payload = encode_request(resource_, scope_, records, sender_.settings().protocol);
  } catch (const std::exception& e) {
    sender_.dropped(records.size(), e.what());
    return telemetry::ExportResult::failure;
  }
  return sender_.send(std::move(payload), records.size(), deadline)
             ? telemetry::ExportResult::success
             : telemetry::ExportResult::failure;
}

template <class Record>
void OtlpBatchExporter<Record>::shutdown(telemetry::Deadline deadline) noexcept {
  sender_.shutdown(deadline);
}

template class OtlpBatchExporter<std::unique_ptr<telemetry::SpanData>>;
template class OtlpBatchExporter<telemetry::LogRecordData>;

}  // namespace gym::exporters
