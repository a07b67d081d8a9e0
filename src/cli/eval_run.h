#pragma once
// `gym eval run [--no-serve]` (docs/guides/evaluation.md): expand the input, start the servers (or
// find a running deployment), collect, aggregate, shut down.
#include "core/config.h"
#include "telemetry/process_telemetry.h"

namespace gym::cli {

// Returns the exit code (0, 1, 2, 3, 130, 143: docs/design/failures-and-retries.md#exit-codes).
// Throws core::ConfigError for config and usage errors (exit 1, nothing started). `pipelines`
// builds this process's metrics pipeline: the orchestrator's with servers, the `rollout_collection`
// one with --no-serve.
// With `json_summary` (--json) stdout holds one line, the run's summary as a JSON object
// (rollouts::report_json), written whatever happened; everything else goes to stderr.
int run_eval(const core::ConfigSources& sources, bool no_serve,
             const telemetry::PipelineFactory& pipelines, bool json_summary = false);

}  // namespace gym::cli
