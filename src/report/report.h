#pragma once
// `gym telemetry report` (docs/guides/telemetry-report.md): a human summary of one run, read back
// from the lines the console exporter wrote (OTLP/JSON ExportMetricsServiceRequest, one per line).
// Many processes append to one file, so the reader keeps, per process (`service.instance.id`), its
// last export: data are cumulative, so the last export holds the whole run. Processes are then
// grouped by `nemo.gym.server.name`; the workers of one server are summed. Lines that are not
// metrics exports (log text, span lines) are skipped and counted, and a broken export line never
// stops the report. Each export line is decoded by the OTLP/JSON decoder of the exporters
// (exporters/otlp/otlp_json_decode.h).
//
// Pure: no I/O besides the streams handed in, no shared state. Rendering: report_format.h.
#include <cstddef>
#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "exporters/otlp/otlp_json_decode.h"

namespace gym::report {

// Explicit-bucket histogram data as exported (or the sum of several such points), as the OTLP/JSON
// decoder gives it.
using exporters::BucketHistogram;

// A percentile estimated from bucket counts.
struct PercentileEstimate {
  double value = 0;
  // The rank lies in the overflow bucket: the true value is above `value` (the last bound).
  bool above_last_bound = false;

  friend bool operator==(const PercentileEstimate&, const PercentileEstimate&) = default;
};

// The `quantile` (in (0, 1]; std::invalid_argument otherwise) of the samples in `h`: find the
// bucket holding rank quantile × samples, and interpolate linearly inside it, between its edges
// clamped to the recorded min and max (so one sample is reported exactly, and the estimate
// never leaves [min, max]). Without a recorded min the first bucket starts at 0 (every gym-cpp
// histogram measures a non-negative quantity). A rank in the overflow bucket reports the last
// bound with `above_last_bound`. nullopt when `h` holds no samples or its bucket counts do not
// match its bounds.
std::optional<PercentileEstimate> estimate_percentile(const BucketHistogram& h, double quantile);

// Adds `part` into `total` (bucket counts, count and sum add; min and max combine). An empty
// `total` (no buckets yet) takes `part`'s bounds. Returns false and changes nothing when the
// bounds differ.
bool add_histogram(BucketHistogram& total, const BucketHistogram& part);

// A histogram summed over a server's processes, with its p50, p95 and p99 (nullopt: no samples).
struct DurationSummary {
  BucketHistogram histogram;
  std::optional<PercentileEstimate> p50;
  std::optional<PercentileEstimate> p95;
  std::optional<PercentileEstimate> p99;
};

// `gym.servers.active` of one process that records it (the orchestrator).
struct ServersActiveRow {
  std::string server;  // nemo.gym.server.name of the recording process
  std::string instance_id;
  std::optional<std::int64_t> pid;
  std::int64_t last = 0;    // the value in the process's last export holding the gauge
  std::int64_t peak = 0;    // the largest value over those exports
  std::size_t exports = 0;  // exports holding the gauge: a value set and reset between two
                            // exports (a run shorter than the interval) is not seen
};

// `gym.rollout.duration_ms` of one agent server.
struct RolloutRow {
  std::string server;
  std::size_t processes = 0;  // processes (workers) whose points were summed
  DurationSummary duration_ms;
};

// `gym.verify.success_rate` of one process: a cumulative fraction, never summed.
struct SuccessRatePoint {
  std::string instance_id;
  std::optional<std::int64_t> pid;
  double value = 0;
};

// `gym.verify.duration_ms` and `gym.verify.success_rate` of one resources server.
struct VerifyRow {
  std::string server;
  std::size_t processes = 0;
  std::optional<DurationSummary> duration_ms;   // absent: no duration points
  std::vector<SuccessRatePoint> success_rates;  // one per process, in pid order
};

// `http.server.request.duration` of one server and route, summed over methods, status codes and
// workers.
struct HttpRow {
  std::string server;
  std::string route;                // `http.route`; empty when no route matched (404, 405)
  DurationSummary duration_s;       // in seconds, as exported
  std::uint64_t server_errors = 0;  // samples with `http.response.status_code` >= 500
};

// The connection pool of one recording server towards one destination
// (`nemo.gym.http.destination.server.name`), summed over the server's processes.
struct PoolRow {
  std::string server;
  std::string destination;
  std::optional<std::int64_t> connections;  // gym.http.connection_pool.connect_total
  std::uint64_t queued = 0;                 // queue-duration samples: acquisitions that waited
  std::optional<double> queued_share;       // queued / connections; absent without connections
  std::optional<PercentileEstimate> queue_p99_ms;
  std::uint64_t abandoned = 0;  // samples with queue_outcome = abandoned
};

// The memory gauges of one server process tree (recorded by the orchestrator); absent values
// were not in the latest sample (e.g. PSS).
struct ServerMemoryRow {
  std::string server;
  std::string server_type;
  std::optional<std::int64_t> root_pid;
  std::optional<std::int64_t> processes;
  std::optional<std::int64_t> rss_bytes;
  std::optional<std::int64_t> rss_peak_bytes;
  std::optional<std::int64_t> pss_bytes;
  std::optional<std::int64_t> pss_peak_bytes;
};

// The host memory gauges of one recording process.
struct HostMemoryRow {
  std::string host;  // host.name of the recording process
  std::optional<std::int64_t> usage_bytes;
  std::optional<std::int64_t> available_bytes;
  std::optional<std::int64_t> total_bytes;
  std::optional<std::int64_t> peak_bytes;
};

// Where the slowest rollouts spent their time (issue 14), from the console exporter's span lines:
// the `gym.rollout` spans whose wall time is at least the 90th percentile of all rollouts ("the
// slowest"), and per span name the spans inside them (their descendants in the trace): how many,
// their exact p50/p99 duration, and the share of those rollouts' wall time they cover. Shares are
// inclusive (a SERVER span contains the gym.* span of its handler), so they do not add up to 100 %.
// Spans are told apart by name, kind and the server that recorded them; a CLIENT span's name also
// says where it went, "HTTP POST /v1/responses -> policy_model" (the path of its url.full, the
// server of the SERVER span it caused), so calls to the model, to tools and to /verify get rows of
// their own.
struct SpanTimeRow {
  std::string name;
  std::string kind;    // internal, server, client
  std::string server;  // nemo.gym.server.name (else service.name) of the recording process
  std::size_t count = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double share = 0;  // total duration / total wall time of the slowest rollouts
};

struct TraceSection {
  std::size_t spans = 0;
  std::size_t traces = 0;
  std::size_t rollouts = 0;       // gym.rollout spans
  std::size_t slow_rollouts = 0;  // those at or above slow_threshold_ms
  std::optional<double> rollout_p50_ms, rollout_p99_ms, slow_threshold_ms;
  std::vector<SpanTimeRow> rows;  // by share, largest first
};

// What was read, and what was skipped.
struct ReportInput {
  std::size_t lines = 0;                        // non-empty lines read
  std::size_t exports = 0;                      // metrics exports (resourceMetrics entries) read
  std::size_t processes = 0;                    // distinct service.instance.id
  std::size_t span_lines = 0;                   // console span lines
  std::size_t other_lines = 0;                  // lines that are neither (log text)
  std::size_t malformed_lines = 0;              // export lines that could not be read
  std::vector<std::string> malformed_examples;  // the first few, "<source>:<line>: <reason>"
  std::vector<std::string> notes;               // points that could not be summed, and why
};

// Every section of the report (docs/guides/telemetry-report.md#the-sections); an empty section has
// no data.
struct TelemetryReport {
  ReportInput input;
  std::vector<ServersActiveRow> servers;
  std::vector<RolloutRow> rollouts;
  std::vector<VerifyRow> verification;
  std::vector<HttpRow> http;
  std::vector<PoolRow> pool;
  std::vector<ServerMemoryRow> server_memory;
  std::vector<HostMemoryRow> host_memory;
  TraceSection traces;
};

// Reads console-exporter lines from one or several sources, then builds the report. Exports of
// one process are taken in reading order: the last one read is its last export.
// Not thread-safe: one reader is fed from one thread.
class ReportReader {
 public:
  // `source` names the stream in messages about malformed lines (e.g. the file path).
  void add_stream(std::istream& in, std::string_view source = "input");
  // One line (without its newline). A line may carry a prefix before its JSON, such as the
  // orchestrator's `(server) ` on the terminal.
  void add_line(std::string_view line, std::string_view source = "input");

  TelemetryReport build() const;

  // One process's export as the OTLP/JSON decoder gives it (its resourceMetrics entries of one
  // line merged); public so the implementation's helpers can name it.
  using ExportedMetric = exporters::DecodedMetric;
  using ProcessExport = exporters::DecodedResourceMetrics;

 private:
  struct Process {
    ProcessExport last;
    std::optional<std::int64_t> servers_active_last;
    std::optional<std::int64_t> servers_active_peak;
    std::size_t servers_active_exports = 0;
  };

  void take_export(const std::string& key, ProcessExport&& data);
  // A console span line; false when it is not one.
  bool take_span(const boost::json::object& line);

  // What the trace section needs of one span.
  struct SpanRecord {
    std::string trace_id, span_id, parent_span_id, name, kind;
    std::string server;  // the recording process's nemo.gym.server.name, else service.name
    std::string path;    // a CLIENT span's url.full without scheme, authority and query
    std::uint64_t start = 0, end = 0;
  };
  static TraceSection trace_section(const std::vector<SpanRecord>& spans);

  ReportInput input_;
  std::vector<SpanRecord> spans_;
  std::map<std::string, Process> processes_;         // by service.instance.id
  std::map<std::string, std::size_t> line_numbers_;  // per source
};

// Convenience: one stream.
TelemetryReport read_report(std::istream& in, std::string_view source = "input");

}  // namespace gym::report
