#include "telemetry/process_telemetry.h"

namespace gym::telemetry {

TelemetrySettings resolve_checked_settings(const boost::json::object& config, const GetEnv& getenv,
                                           const PipelineFactory& pipelines) {
  TelemetrySettings settings = resolve_settings(config, getenv);
  if (pipelines.check) pipelines.check(settings, getenv ? getenv : process_env());
  return settings;
}

ProcessTelemetry::ProcessTelemetry(const PipelineFactory& factory, TelemetrySettings settings,
                                   ProcessIdentity identity, std::string run_id, ProcessRole role,
                                   const GetEnv& getenv)
    : settings_(std::move(settings)), identity_(std::move(identity)), run_id_(std::move(run_id)) {
  if (settings_.metrics_active() && factory.build) {
    pipeline_ = factory.build(settings_, identity_, run_id_, getenv);
  }
  MeterProvider* provider = nullptr;
  if (pipeline_) {
    provider = &pipeline_->provider();
  } else {
    MeterProviderOptions off;
    off.enabled = false;
    disabled_ = std::make_unique<MeterProvider>(std::move(off));
    provider = disabled_.get();
  }
  metrics_ = std::make_unique<GymMetrics>(*provider, role);
}

ProcessTelemetry::~ProcessTelemetry() { shutdown(); }

bool ProcessTelemetry::force_flush(std::chrono::milliseconds wait) {
  return pipeline_ ? pipeline_->force_flush(wait) : true;
}

bool ProcessTelemetry::shutdown(std::chrono::milliseconds wait) {
  if (shut_down_) return true;
  shut_down_ = true;
  // The final collection runs the facade's observable callbacks: export before
  // it goes.
  return pipeline_ ? pipeline_->shutdown(wait) : true;
}

}  // namespace gym::telemetry
