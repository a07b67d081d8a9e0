#pragma once
// The metrics pipeline of one process, built from its resolved settings (telemetry.md 5, 7):
// the meter provider, the exporter the settings choose (OTLP/HTTP or console) and one periodic
// reader. With metrics inactive (enabled false, metrics_enabled false or OTEL_SDK_DISABLED) the
// provider is disabled: its instruments are empty handles and no thread is started.
//
// Create it at process start, before the HTTP client pool; call shutdown() on orderly exit
// (bounded to 5 s, decision D5). Thread-safety: as MeterProvider and PeriodicReader.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "exporters/otlp/otlp_http_exporter.h"
#include "telemetry/config.h"
#include "telemetry/export/periodic_reader.h"
#include "telemetry/metrics/meter_provider.h"
#include "telemetry/resource.h"

namespace gym::exporters {

class MetricsPipeline {
 public:
  // Throws core::ConfigError for invalid OTLP settings and std::runtime_error when the console
  // file cannot be opened.
  MetricsPipeline(const telemetry::TelemetrySettings& settings,
                  const telemetry::ProcessIdentity& identity, const std::string& run_id,
                  const telemetry::GetEnv& getenv);
  ~MetricsPipeline();  // shutdown() unless done
  MetricsPipeline(const MetricsPipeline&) = delete;
  MetricsPipeline& operator=(const MetricsPipeline&) = delete;

  telemetry::MeterProvider& provider() noexcept { return *provider_; }
  bool active() const noexcept { return reader_ != nullptr; }

  bool force_flush(std::chrono::milliseconds wait = telemetry::kShutdownBound);
  bool shutdown(std::chrono::milliseconds wait = telemetry::kShutdownBound);

  // What the pipeline did so far: the reader's exports and failures and, with the OTLP exporter,
  // its sent, dropped and retried counts (drops are logged, never exported: telemetry.md 10).
  // After shutdown(): the figures at the end of shutdown. All zero when inactive.
  struct Stats {
    telemetry::PeriodicReader::Stats reader;
    std::optional<OtlpHttpExporter::Stats> otlp;  // nullopt unless the exporter is OTLP
  };
  Stats stats() const;

 private:
  std::unique_ptr<telemetry::MeterProvider> provider_;
  std::unique_ptr<telemetry::PeriodicReader> reader_;  // null when inactive
  const OtlpHttpExporter* otlp_ = nullptr;  // owned by reader_; valid while reader_ is set
  Stats final_stats_;                       // taken by shutdown()
};

}  // namespace gym::exporters
