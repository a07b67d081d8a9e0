#include "telemetry/process_telemetry.h"

#include "telemetry/common/shutdown_report.h"

#include <algorithm>
#include <functional>
#include <future>
#include <system_error>
#include <vector>

#include <spdlog/spdlog.h>

namespace gym::telemetry {

TelemetrySettings resolve_checked_settings(const boost::json::object& config, const GetEnv& getenv,
                                           const PipelineFactory& pipelines) {
  TelemetrySettings settings = resolve_settings(config, getenv);
  if (pipelines.check) pipelines.check(settings, getenv ? getenv : process_env());
  return settings;
}

std::chrono::milliseconds shutdown_bound(const GetEnv& getenv) {
  const auto e = getenv ? first_env(getenv, {kShutdownBoundVariable}) : std::nullopt;
  return e ? std::min(parse_positive_ms(*e), kShutdownBound) : kShutdownBound;
}

ProcessTelemetry::ProcessTelemetry(const PipelineFactory& factory, TelemetrySettings settings,
                                   ProcessIdentity identity, std::string run_id, ProcessRole role,
                                   const GetEnv& getenv)
    : settings_(std::move(settings)), identity_(std::move(identity)), run_id_(std::move(run_id)) {
  // The settings' warnings (unknown keys, ignored options), whichever signals are on: a
  // traces-only process says them too.
  if (settings_.active())
    for (const auto& w : settings_.warnings) spdlog::warn("{}", w);
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
  if (settings_.traces_active() && !settings_.span_group_set.none() && factory.build_spans) {
    if (auto exporter = factory.build_spans(settings_, identity_, run_id_, getenv)) {
      spans_ = std::make_unique<BatchSpanProcessor>(std::move(exporter), settings_.span_batch,
                                                    settings_.export_interval);
      tracer_ = std::make_unique<Tracer>(settings_.span_group_set, settings_.sampler, spans_.get());
    }
  }
  if (!tracer_) tracer_ = std::make_unique<Tracer>();
  if (settings_.logs_active() && factory.build_logs) {
    if (auto exporter = factory.build_logs(settings_, identity_, run_id_, getenv))
      logs_ = std::make_unique<LogBridge>(std::move(exporter), settings_.log_batch,
                                          settings_.export_interval);
  }
}

std::optional<BatchProcessor<LogRecordData>::Stats> ProcessTelemetry::log_stats() const {
  if (!logs_) return std::nullopt;
  return logs_->stats();
}

std::optional<BatchSpanProcessor::Stats> ProcessTelemetry::span_stats() const {
  if (!spans_) return std::nullopt;
  return spans_->stats();
}

ProcessTelemetry::~ProcessTelemetry() { shutdown(); }

namespace {

// What is left of one bound (never negative).
std::chrono::milliseconds time_left(std::chrono::steady_clock::time_point end) {
  return std::max(
      std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()),
      std::chrono::milliseconds(0));
}

// Runs `first` on this thread and `others` each on a thread of its own, side by side; true when
// all returned true. The signals flush in parallel within one bound
// (docs/design/telemetry-contract.md#shutdown-flush), so a traces collector that hangs does not
// spend the time of the last metrics export, nor the reverse. Without a thread to spare, a step
// runs in turn.
bool side_by_side(const std::function<bool()>& first,
                  std::initializer_list<std::function<bool()>> others) {
  std::vector<std::future<bool>> started;
  bool ok = true;
  for (const auto& step : others) {
    try {
      started.push_back(std::async(std::launch::async, step));
    } catch (const std::system_error&) {
      ok = step() && ok;
    }
  }
  ok = first() && ok;
  for (auto& f : started) ok = f.get() && ok;
  return ok;
}

}  // namespace

bool ProcessTelemetry::force_flush(std::chrono::milliseconds wait) {
  return side_by_side([&] { return pipeline_ ? pipeline_->force_flush(wait) : true; },
                      {[&] { return spans_ ? spans_->force_flush(wait) : true; },
                       [&] { return logs_ ? logs_->force_flush(wait) : true; }});
}

bool ProcessTelemetry::shutdown(std::chrono::milliseconds wait) {
  if (shut_down_) return true;
  shut_down_ = true;
  // Spans still open are ended as truncated; the span queue, the log records and the last metrics
  // go out within one bound. The final collection runs the facade's observable callbacks: on this
  // thread, before it goes.
  const auto end = std::chrono::steady_clock::now() + wait;
  // What fails is said in one line at the end (a caller that began the report says it).
  const bool report = shutdown_report::begin();
  tracer_->begin_shutdown();
  const bool flushed = side_by_side([&] { return pipeline_ ? pipeline_->shutdown(wait) : true; },
                                    {[&] { return spans_ ? spans_->shutdown(wait) : true; },
                                     [&] { return logs_ ? logs_->force_flush(wait) : true; }});
  // What the shutdown itself logged (a failed final export, dropped spans) in what is left.
  const bool logs = logs_ ? logs_->shutdown(time_left(end)) : true;
  if (report)
    if (auto line = shutdown_report::end()) spdlog::warn("{}", *line);
  return flushed && logs;
}

}  // namespace gym::telemetry
