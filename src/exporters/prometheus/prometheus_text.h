#pragma once
// Snapshot -> Prometheus text exposition format 0.0.4, with the OpenTelemetry-to-Prometheus
// conversion (docs/reference/telemetry.md#name-conversion). Pure functions over the plain-data
// snapshot: no I/O, no shared state, no locale (numbers are written with std::to_chars).
//
// Conversion rules (docs/reference/telemetry.md, "Scrape it with Prometheus", has the unit table):
// - Names: every character outside [a-zA-Z0-9_] becomes `_`, runs of `_` collapse to one, and a
//   leading digit gets a `_` prefix. The unit suffix (prometheus_unit_suffix) is appended unless
//   the name already ends with it. Monotonic counters (also observable ones) end in `_total`,
//   never twice: a trailing `_total` of the OTel name is removed before the unit and added back
//   at the end. Non-monotonic sums and gauges are `gauge` families without suffix; histograms
//   are `histogram` families with `_bucket{le=...}` (cumulative, ending in `le="+Inf"`), `_sum`
//   and `_count`.
// - Labels: attribute keys are converted like names (a leading digit gets `key_`); two keys that
//   convert to the same label name are joined into one label whose values are joined with `;`
//   in key order. Every series carries `otel_scope_name` and `otel_scope_version`; an attribute
//   that converts to one of those (or to `le` on a histogram) is dropped. Label values escape
//   `\`, `"` and newline.
// - Resource attributes appear once, as `target_info{...} 1` of a `gauge` family.
// - `# HELP` and `# TYPE` come once per family. HELP is the description, else the OTel name.
//   OTel metrics that convert to the same Prometheus name share the family when their type
//   agrees; otherwise (and for a metric named like `target_info`) the later one is left out and
//   reported through `conflicts`.
// - Values: integers in decimal, doubles as the shortest text that reads back exactly; NaN,
//   +Inf and -Inf are spelled `NaN`, `+Inf`, `-Inf`. No timestamps (the scrape time counts).
#include <string>
#include <string_view>
#include <vector>

#include "telemetry/metrics/metric_data.h"

namespace gym::exporters {

// The Content-Type of the exposition.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// The unit word of an OTel unit: `ms` -> `milliseconds`, `By` -> `bytes`, `By/s` ->
// `bytes_per_second`, `1` -> `ratio` for gauges only; annotations in braces (`{request}`) and
// the empty unit give "". An unknown unit is converted like a name (`widgets` -> `widgets`).
std::string prometheus_unit_suffix(std::string_view unit, telemetry::InstrumentKind kind);

// The Prometheus name of a metric family: `gym.rollout.duration_ms` (histogram, `ms`) ->
// `gym_rollout_duration_ms_milliseconds`; a counter `x_total` -> `x_total`.
std::string prometheus_metric_name(const telemetry::InstrumentDescriptor& descriptor);

// A label name from an attribute key: `nemo.gym.server.name` -> `nemo_gym_server_name`.
std::string prometheus_label_name(std::string_view key);

// A sample value: `NaN`, `+Inf`, `-Inf` or the shortest round-trip decimal form.
std::string prometheus_number(double value);

// The whole exposition of one snapshot. `conflicts`, when given, receives the OTel names of
// metrics left out because their Prometheus name clashes with another family.
std::string render_prometheus_text(const telemetry::MetricsSnapshot& snapshot,
                                   std::vector<std::string>* conflicts = nullptr);

}  // namespace gym::exporters
