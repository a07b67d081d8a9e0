#pragma once
// The OTLP/HTTP metrics exporter (telemetry.md 7.2, 7.3; decisions D8, D9).
//
// It owns an event loop on its own thread and a small HTTP client of its own, separate from the
// process's rollout pool: a hung collector never takes pool slots, and export traffic never
// appears in the pool metrics. export_metrics() encodes the snapshot (protobuf or JSON,
// optionally gzip) on the calling thread, sends it on the loop, and waits at most until its
// deadline. 429/502/503/504, connection errors and timeouts are retried with exponential
// backoff (1 s, 2 s, 4 s, ... +-20 %, or Retry-After seconds) while the OTLP timeout, counted
// from the first attempt, allows; any other status drops the batch, and so does a refused TLS
// handshake of an https:// endpoint (untrusted certificate, wrong host: http::TlsError), which
// no retry would change. Failures are logged at most once per interval (drops held back by the
// interval are summarised at shutdown) and never thrown.
//
// Thread-safety: as MetricExporter (one caller at a time). http:// and https:// endpoints
// (system trust store; SSL_CERT_FILE / SSL_CERT_DIR for a private CA).
#include <chrono>
#include <cstdint>
#include <memory>

#include "exporters/otlp/otlp_settings.h"
#include "telemetry/export/exporter.h"

namespace gym::exporters {

class OtlpHttpExporter final : public telemetry::MetricExporter {
 public:
  // `log_interval`: at most one failure summary per this period (the export interval).
  explicit OtlpHttpExporter(OtlpSettings settings,
                            std::chrono::milliseconds log_interval = std::chrono::seconds(10));
  ~OtlpHttpExporter() override;

  telemetry::ExportResult export_metrics(const telemetry::MetricsSnapshot& snapshot,
                                         telemetry::Deadline deadline) noexcept override;
  void shutdown(telemetry::Deadline deadline) noexcept override;

  struct Stats {
    std::uint64_t batches_sent = 0;     // accepted with a 2xx
    std::uint64_t batches_dropped = 0;  // given up on
    std::uint64_t points_dropped = 0;
    std::uint64_t retries = 0;
    std::uint64_t points_rejected = 0;  // partial_success.rejected_data_points
  };
  Stats stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gym::exporters
