#pragma once
// Which spans are recorded and exported (docs/reference/telemetry.md#reference, Sampling): the
// samplers of OTEL_TRACES_SAMPLER with OTEL_TRACES_SAMPLER_ARG. A span that is not sampled still
// gets ids, so the calls it makes carry `traceparent` with the sampled flag off and a parent-based
// sampler downstream drops the rest of the trace too.

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

// OTEL_TRACES_SAMPLER (one of the six names, case-insensitive) and OTEL_TRACES_SAMPLER_ARG (a
// ratio in [0, 1] for the traceidratio kinds; default 1.0). An unknown sampler or a bad ratio is
// a core::ConfigError naming the variable.
Sampler resolve_sampler(const core::GetEnv& getenv);

}  // namespace gym::telemetry
