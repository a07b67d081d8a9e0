#pragma once
// How a pooled connection acquisition waited (docs/design/telemetry-contract.md#metrics): why it
// had to wait, classified when the wait starts, and how the wait ended. The pool (src/http)
// produces these values and the gym_metrics facade labels its queue samples with them, so both use
// this one definition.
namespace gym::telemetry {

enum class QueueConstraint { total, per_host, unknown };
enum class QueueOutcome { ok, abandoned };

}  // namespace gym::telemetry
