#pragma once
// Which spans are recorded and exported (telemetry.md 8.3): the samplers of OTEL_TRACES_SAMPLER
// with OTEL_TRACES_SAMPLER_ARG, and the batch span processor's OTEL_BSP_* settings (7.3). A
// span that is not sampled still gets ids, so the calls it makes carry `traceparent` with the
// sampled flag off and a parent-based sampler downstream drops the rest of the trace too.
#include <chrono>
#include <cstddef>

#include "core/config.h"
#include "telemetry/traces/trace_context.h"

namespace gym::telemetry {

enum class SamplerKind {
  always_on,
  always_off,
  traceidratio,
  parentbased_always_on,
  parentbased_always_off,
  parentbased_traceidratio,
};

struct Sampler {
  SamplerKind kind = SamplerKind::parentbased_always_on;  // the OpenTelemetry default
  double ratio = 1.0;  // traceidratio kinds: OTEL_TRACES_SAMPLER_ARG in [0, 1]

  // Whether a new span of trace `trace_id` under `parent` (null or invalid: a root span) is
  // sampled. Parent-based kinds follow a valid parent's flag; traceidratio keeps a trace when
  // the last 8 bytes of its id, read as a big-endian number, are below ratio * 2^64, so every
  // process decides the same for one trace.
  bool sample(const SpanContext* parent, const TraceId& trace_id) const noexcept;
};

struct BatchSpanSettings {
  std::size_t max_queue_size = 2048;                 // OTEL_BSP_MAX_QUEUE_SIZE
  std::size_t max_export_batch_size = 512;           // OTEL_BSP_MAX_EXPORT_BATCH_SIZE
  std::chrono::milliseconds schedule_delay{5'000};   // OTEL_BSP_SCHEDULE_DELAY
  std::chrono::milliseconds export_timeout{30'000};  // OTEL_BSP_EXPORT_TIMEOUT
};

// OTEL_TRACES_SAMPLER (one of the six names, case-insensitive) and OTEL_TRACES_SAMPLER_ARG (a
// ratio in [0, 1] for the traceidratio kinds; default 1.0). An unknown sampler or a bad ratio is
// a core::ConfigError naming the variable (T1).
Sampler resolve_sampler(const core::GetEnv& getenv);

// The OTEL_BSP_* variables: positive whole numbers; a batch larger than the queue is a
// core::ConfigError, as is any other invalid value.
BatchSpanSettings resolve_batch_span_settings(const core::GetEnv& getenv);

}  // namespace gym::telemetry
