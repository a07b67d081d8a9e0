#include "report/report.h"

#include "telemetry/metrics/gym_metrics.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "core/json_text.h"
#include "exporters/otlp/otlp_json_decode.h"

namespace gym::report {
namespace json = boost::json;
using telemetry::AttributeSet;
using telemetry::AttributeValue;
using telemetry::NumberPoint;

namespace {

// The exported names the report reads come from the facade (gym_metrics.h); the resource
// attribute keys are those of docs/design/telemetry-contract.md#resource-attributes.
namespace metric = telemetry::metric_names;

namespace key {
constexpr std::string_view kInstanceId = "service.instance.id";
constexpr std::string_view kServiceName = "service.name";
constexpr std::string_view kServerName = "nemo.gym.server.name";
constexpr std::string_view kServerType = "nemo.gym.server.type";
constexpr std::string_view kPid = "process.pid";
constexpr std::string_view kHostName = "host.name";
using telemetry::attribute_keys::kDestination;
using telemetry::attribute_keys::kMemoryType;
using telemetry::attribute_keys::kQueueOutcome;
using telemetry::attribute_keys::kRoute;
using telemetry::attribute_keys::kStatusCode;
}  // namespace key

constexpr std::string_view kAbandoned = "abandoned";
constexpr std::size_t kMalformedExamples = 3;

using ProcessExport = ReportReader::ProcessExport;
using ExportedMetric = ReportReader::ExportedMetric;

// ---- the processes of one export line ----

const std::string* string_attribute(const AttributeSet& set, std::string_view name) {
  const AttributeValue* v = set.find(name);
  return v ? std::get_if<std::string>(v) : nullptr;
}

std::optional<std::int64_t> int_attribute(const AttributeSet& set, std::string_view name) {
  const AttributeValue* v = set.find(name);
  if (!v) return std::nullopt;
  if (const auto* i = std::get_if<std::int64_t>(v)) return *i;
  if (const auto* d = std::get_if<double>(v)) return static_cast<std::int64_t>(std::llround(*d));
  if (const auto* s = std::get_if<std::string>(v)) {
    std::int64_t out = 0;
    auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), out);
    if (ec == std::errc() && end == s->data() + s->size()) return out;
  }
  return std::nullopt;
}

std::string server_name_of(const AttributeSet& resource) {
  if (const std::string* s = string_attribute(resource, key::kServerName)) return *s;
  if (const std::string* s = string_attribute(resource, key::kServiceName)) return *s;
  return "(unnamed)";
}

// Processes are told apart by service.instance.id (unique per process and worker); a resource
// without one (not written by gym-cpp) falls back to its server name and pid.
std::string process_key(const AttributeSet& resource) {
  if (const std::string* id = string_attribute(resource, key::kInstanceId)) return *id;
  auto pid = int_attribute(resource, key::kPid);
  return fmt::format("{}:{}", server_name_of(resource), pid ? std::to_string(*pid) : "?");
}

// One ExportMetricsServiceRequest: its resourceMetrics entries, those of one process merged.
// Throws exporters::OtlpJsonError for a request the decoder cannot read.
std::vector<std::pair<std::string, ProcessExport>> to_exports(const json::object& request) {
  std::vector<std::pair<std::string, ProcessExport>> out;
  for (ProcessExport& data : exporters::decode_otlp_json(request)) {
    std::string k = process_key(data.resource);
    auto same = std::find_if(out.begin(), out.end(), [&](const auto& x) { return x.first == k; });
    if (same == out.end()) {
      out.emplace_back(std::move(k), std::move(data));
    } else {
      for (auto& m : data.metrics) same->second.metrics.push_back(std::move(m));
    }
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// ---- building the report ----

const ExportedMetric* find_metric(const ProcessExport& e, std::string_view name) {
  for (const ExportedMetric& m : e.metrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::int64_t int_of(const NumberPoint& p) {
  if (const auto* i = std::get_if<std::int64_t>(&p.value)) return *i;
  return static_cast<std::int64_t>(std::llround(std::get<double>(p.value)));
}

double double_of(const NumberPoint& p) {
  if (const auto* d = std::get_if<double>(&p.value)) return *d;
  return static_cast<double>(std::get<std::int64_t>(p.value));
}

// The value of a gauge without attributes (or its first point).
std::optional<std::int64_t> plain_gauge(const ProcessExport& e, std::string_view name) {
  const ExportedMetric* m = find_metric(e, name);
  if (!m || m->numbers.empty()) return std::nullopt;
  return int_of(m->numbers.front());
}

DurationSummary summarise(BucketHistogram h) {
  DurationSummary out;
  out.p50 = estimate_percentile(h, 0.50);
  out.p95 = estimate_percentile(h, 0.95);
  out.p99 = estimate_percentile(h, 0.99);
  out.histogram = std::move(h);
  return out;
}

// Sums histogram points of one server; a point with other bounds is left out with a note.
struct HistogramSum {
  BucketHistogram total;
  bool any = false;

  void add(const BucketHistogram& part, std::vector<std::string>& notes, std::string_view what) {
    if (add_histogram(total, part)) {
      any = true;
    } else {
      notes.push_back(fmt::format("{}: a point with other bucket bounds was left out", what));
    }
  }
};

struct ProcessView {
  const std::string* instance_id;
  const ProcessExport* data;
  std::string server;
  std::optional<std::int64_t> pid;
};

std::vector<RolloutRow> rollout_rows(const std::vector<ProcessView>& views,
                                     std::vector<std::string>& notes) {
  std::map<std::string, std::pair<HistogramSum, std::set<std::string>>> by_server;
  for (const ProcessView& v : views) {
    const ExportedMetric* m = find_metric(*v.data, metric::kRolloutDuration);
    if (!m || m->histograms.empty()) continue;
    auto& [sum, procs] = by_server[v.server];
    for (const auto& point : m->histograms) sum.add(point.histogram, notes, v.server);
    procs.insert(*v.instance_id);
  }
  std::vector<RolloutRow> rows;
  for (auto& [server, acc] : by_server) {
    if (acc.first.any) rows.push_back({server, acc.second.size(), summarise(acc.first.total)});
  }
  return rows;
}

std::vector<VerifyRow> verify_rows(const std::vector<ProcessView>& views,
                                   std::vector<std::string>& notes) {
  struct Acc {
    HistogramSum duration;
    std::vector<SuccessRatePoint> rates;
    std::set<std::string> procs;
  };
  std::map<std::string, Acc> by_server;
  for (const ProcessView& v : views) {
    const ExportedMetric* d = find_metric(*v.data, metric::kVerifyDuration);
    const ExportedMetric* r = find_metric(*v.data, metric::kVerifySuccessRate);
    const bool has_duration = d && !d->histograms.empty();
    const bool has_rate = r && !r->numbers.empty();
    if (!has_duration && !has_rate) continue;
    Acc& acc = by_server[v.server];
    acc.procs.insert(*v.instance_id);
    if (has_duration) {
      for (const auto& point : d->histograms) acc.duration.add(point.histogram, notes, v.server);
    }
    // A cumulative fraction per process: summing or averaging it would hide a failing worker.
    if (has_rate) acc.rates.push_back({*v.instance_id, v.pid, double_of(r->numbers.front())});
  }
  std::vector<VerifyRow> rows;
  for (auto& [server, acc] : by_server) {
    VerifyRow row{server, acc.procs.size(), std::nullopt, std::move(acc.rates)};
    if (acc.duration.any) row.duration_ms = summarise(acc.duration.total);
    std::sort(row.success_rates.begin(), row.success_rates.end(),
              [](const auto& a, const auto& b) { return a.pid < b.pid; });
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<HttpRow> http_rows(const std::vector<ProcessView>& views,
                               std::vector<std::string>& notes) {
  std::map<std::pair<std::string, std::string>, std::pair<HistogramSum, std::uint64_t>> by_route;
  for (const ProcessView& v : views) {
    const ExportedMetric* m = find_metric(*v.data, metric::kHttpRequestDuration);
    if (!m) continue;
    for (const auto& point : m->histograms) {
      const std::string* route = string_attribute(point.attributes, key::kRoute);
      auto& [sum, errors] = by_route[{v.server, route ? *route : std::string()}];
      sum.add(point.histogram, notes, v.server + " http");
      auto status = int_attribute(point.attributes, key::kStatusCode);
      if (status && *status >= 500) errors += point.histogram.count;
    }
  }
  std::vector<HttpRow> rows;
  for (auto& [k, acc] : by_route) {
    if (acc.first.any) rows.push_back({k.first, k.second, summarise(acc.first.total), acc.second});
  }
  return rows;
}

std::vector<PoolRow> pool_rows(const std::vector<ProcessView>& views,
                               std::vector<std::string>& notes) {
  struct Acc {
    std::optional<std::int64_t> connections;
    HistogramSum queue;
    std::uint64_t abandoned = 0;
  };
  std::map<std::pair<std::string, std::string>, Acc> by_destination;
  auto destination_of = [](const AttributeSet& a) {
    const std::string* d = string_attribute(a, key::kDestination);
    return d ? *d : std::string("(none)");
  };
  for (const ProcessView& v : views) {
    if (const ExportedMetric* c = find_metric(*v.data, metric::kPoolConnectTotal)) {
      for (const auto& point : c->numbers) {
        Acc& acc = by_destination[{v.server, destination_of(point.attributes)}];
        acc.connections = acc.connections.value_or(0) + int_of(point);
      }
    }
    if (const ExportedMetric* q = find_metric(*v.data, metric::kPoolQueueDuration)) {
      for (const auto& point : q->histograms) {
        Acc& acc = by_destination[{v.server, destination_of(point.attributes)}];
        acc.queue.add(point.histogram, notes, v.server + " pool queue");
        const std::string* outcome = string_attribute(point.attributes, key::kQueueOutcome);
        if (outcome && *outcome == kAbandoned) acc.abandoned += point.histogram.count;
      }
    }
  }
  std::vector<PoolRow> rows;
  for (auto& [k, acc] : by_destination) {
    PoolRow row{k.first,      k.second,     acc.connections, acc.queue.total.count,
                std::nullopt, std::nullopt, acc.abandoned};
    // Only waits are sampled, so with connect_total present no sample means no wait: the 0 %
    // is measured, not invented.
    if (acc.connections && *acc.connections > 0) {
      row.queued_share = static_cast<double>(row.queued) / static_cast<double>(*acc.connections);
    }
    row.queue_p99_ms = estimate_percentile(acc.queue.total, 0.99);
    rows.push_back(std::move(row));
  }
  return rows;
}

// The orchestrator's memory gauges: one row per sampled server tree (name and root pid).
std::vector<ServerMemoryRow> server_memory_rows(const std::vector<ProcessView>& views) {
  std::map<std::pair<std::string, std::int64_t>, ServerMemoryRow> by_tree;
  auto row_of = [&](const AttributeSet& a) -> ServerMemoryRow& {
    const std::string* server = string_attribute(a, key::kServerName);
    const std::string name = server ? *server : std::string("(unnamed)");
    auto pid = int_attribute(a, key::kPid);
    ServerMemoryRow& row = by_tree[{name, pid.value_or(-1)}];
    row.server = name;
    row.root_pid = pid;
    if (const std::string* type = string_attribute(a, key::kServerType)) row.server_type = *type;
    return row;
  };
  using Field = std::optional<std::int64_t> ServerMemoryRow::*;
  auto by_memory_type = [&](const ExportedMetric* m, Field rss, Field pss) {
    if (!m) return;
    for (const auto& point : m->numbers) {
      const std::string* type = string_attribute(point.attributes, key::kMemoryType);
      if (!type) continue;
      if (*type == "rss") row_of(point.attributes).*rss = int_of(point);
      if (*type == "pss") row_of(point.attributes).*pss = int_of(point);
    }
  };
  for (const ProcessView& v : views) {
    by_memory_type(find_metric(*v.data, metric::kServerMemoryUsage), &ServerMemoryRow::rss_bytes,
                   &ServerMemoryRow::pss_bytes);
    by_memory_type(find_metric(*v.data, metric::kServerMemoryPeak),
                   &ServerMemoryRow::rss_peak_bytes, &ServerMemoryRow::pss_peak_bytes);
    if (const ExportedMetric* m = find_metric(*v.data, metric::kServerProcesses)) {
      for (const auto& point : m->numbers) row_of(point.attributes).processes = int_of(point);
    }
  }
  std::vector<ServerMemoryRow> rows;
  for (auto& [k, row] : by_tree) rows.push_back(std::move(row));
  return rows;
}

std::vector<HostMemoryRow> host_memory_rows(const std::vector<ProcessView>& views) {
  std::vector<HostMemoryRow> rows;
  for (const ProcessView& v : views) {
    HostMemoryRow host;
    host.usage_bytes = plain_gauge(*v.data, metric::kHostMemoryUsage);
    host.available_bytes = plain_gauge(*v.data, metric::kHostMemoryAvailable);
    host.total_bytes = plain_gauge(*v.data, metric::kHostMemoryTotal);
    host.peak_bytes = plain_gauge(*v.data, metric::kHostMemoryPeak);
    if (!host.usage_bytes && !host.available_bytes && !host.total_bytes && !host.peak_bytes) {
      continue;
    }
    const std::string* name = string_attribute(v.data->resource, key::kHostName);
    host.host = name ? *name : v.server;
    rows.push_back(std::move(host));
  }
  return rows;
}

}  // namespace

// ---- percentiles ----

std::optional<PercentileEstimate> estimate_percentile(const BucketHistogram& h, double quantile) {
  if (!(quantile > 0 && quantile <= 1)) {
    throw std::invalid_argument(fmt::format("percentile quantile {} is not in (0, 1]", quantile));
  }
  if (h.bucket_counts.size() != h.bounds.size() + 1) return std::nullopt;
  std::uint64_t samples = 0;
  for (std::uint64_t c : h.bucket_counts) samples += c;
  if (samples == 0) return std::nullopt;

  // The bucket holding the rank: the first one whose cumulative count reaches it.
  const double rank = quantile * static_cast<double>(samples);
  std::uint64_t below = 0;
  std::size_t bucket = 0;
  for (; bucket + 1 < h.bucket_counts.size(); ++bucket) {
    const std::uint64_t c = h.bucket_counts[bucket];
    if (c > 0 && static_cast<double>(below + c) >= rank) break;
    below += c;
  }
  const double fraction =
      (rank - static_cast<double>(below)) / static_cast<double>(h.bucket_counts[bucket]);

  if (bucket == h.bounds.size() && !h.bounds.empty()) {
    return PercentileEstimate{h.bounds.back(), true};  // no upper edge to interpolate towards
  }
  // The bucket's edges, narrowed to the recorded min and max: the samples of the lowest and
  // highest non-empty buckets lie within [min, max], so that is where to spread them. Without a
  // min the first bucket starts at 0 (gym-cpp histograms measure non-negative quantities).
  const double inf = std::numeric_limits<double>::infinity();
  double lower = bucket > 0 ? h.bounds[bucket - 1] : -inf;
  double upper = bucket < h.bounds.size() ? h.bounds[bucket] : inf;
  if (h.min) lower = std::max(lower, *h.min);
  if (h.max) upper = std::min(upper, *h.max);
  if (lower == -inf) lower = std::min(0.0, upper);
  if (upper == inf) return std::nullopt;  // no bounds and no max: nothing bounds the samples
  double value = lower + fraction * (upper - lower);
  // Guards against inconsistent input (a min above the bucket, min > max).
  if (h.min) value = std::max(value, *h.min);
  if (h.max) value = std::min(value, *h.max);
  return PercentileEstimate{value, false};
}

bool add_histogram(BucketHistogram& total, const BucketHistogram& part) {
  if (total.bucket_counts.empty() && total.bounds.empty() && total.count == 0) {
    total = part;
    return true;
  }
  if (total.bounds != part.bounds || total.bucket_counts.size() != part.bucket_counts.size()) {
    return false;
  }
  for (std::size_t i = 0; i < part.bucket_counts.size(); ++i) {
    total.bucket_counts[i] += part.bucket_counts[i];
  }
  // An extreme is known only if every side holding samples knows it.
  if (part.count > 0) {
    if (total.count == 0) {
      total.min = part.min;
      total.max = part.max;
    } else {
      total.min =
          total.min && part.min ? std::optional(std::min(*total.min, *part.min)) : std::nullopt;
      total.max =
          total.max && part.max ? std::optional(std::max(*total.max, *part.max)) : std::nullopt;
    }
  }
  total.count += part.count;
  total.sum += part.sum;
  return true;
}

// ---- reading ----

void ReportReader::add_stream(std::istream& in, std::string_view source) {
  std::string line;
  while (std::getline(in, line)) add_line(line, source);
}

void ReportReader::add_line(std::string_view raw, std::string_view source) {
  const std::size_t number = ++line_numbers_[std::string(source)];
  const std::string_view line = trim(raw);
  if (line.empty()) return;
  ++input_.lines;

  auto malformed = [&](std::string_view reason) {
    if (input_.malformed_examples.size() < kMalformedExamples) {
      input_.malformed_examples.push_back(fmt::format("{}:{}: {}", source, number, reason));
    }
    ++input_.malformed_lines;
  };

  // Cheap test first: most lines of a shared log are neither exports nor spans. The JSON may
  // follow a prefix (the orchestrator's `(server) ` on the terminal).
  const std::size_t brace = line.find('{');
  if (brace == std::string_view::npos ||
      (line.find("\"resourceMetrics\"") == std::string_view::npos &&
       line.find("\"trace_id\"") == std::string_view::npos)) {
    ++input_.other_lines;
    return;
  }
  boost::system::error_code ec;
  std::size_t consumed = 0;
  json::value doc = core::parse_json(line.substr(brace), ec, &consumed);
  if (ec && line.find("\"resourceMetrics\"") == std::string_view::npos) {
    ++input_.other_lines;  // log text that mentions "trace_id"
    return;
  }
  if (ec) {
    malformed(fmt::format("not valid JSON at byte {} ({})", brace + consumed, ec.message()));
    return;
  }
  const json::object* request = doc.if_object();
  if (request && !request->contains("resourceMetrics") && request->contains("trace_id")) {
    // A console span line; one without what the trace section needs is some other JSON.
    ++(take_span(*request) ? input_.span_lines : input_.other_lines);
    return;
  }
  if (!request || !request->contains("resourceMetrics")) {
    ++input_.other_lines;  // some other JSON that mentions the word, e.g. a span attribute
    return;
  }
  std::vector<std::pair<std::string, ProcessExport>> exports;
  try {
    exports = to_exports(*request);
  } catch (const std::exception& e) {
    malformed(e.what());
    return;
  }
  for (auto& [k, data] : exports) take_export(k, std::move(data));
}

bool ReportReader::take_span(const json::object& line) {
  auto text = [&](std::string_view key) -> const json::string* {
    const auto* v = line.if_contains(key);
    return v && v->is_string() ? &v->get_string() : nullptr;
  };
  auto nanos = [&](std::string_view key) -> std::optional<std::uint64_t> {
    const auto* v = line.if_contains(key);
    if (!v) return std::nullopt;
    if (v->is_uint64()) return v->get_uint64();
    if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
    return std::nullopt;
  };
  const auto *trace = text("trace_id"), *id = text("span_id"), *parent = text("parent_span_id"),
             *name = text("name"), *kind = text("kind");
  const auto start = nanos("start_time_unix_nano"), end = nanos("end_time_unix_nano");
  if (!trace || !id || !parent || !name || !start || !end || *end < *start) return false;
  auto member = [&](std::string_view object, std::string_view key) -> std::string {
    const auto* o = line.if_contains(object);
    const auto* v = o && o->is_object() ? o->get_object().if_contains(key) : nullptr;
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
  };
  std::string server = member("resource", "nemo.gym.server.name");
  if (server.empty()) server = member("resource", "service.name");
  std::string path = member("attributes", "url.full");
  if (const auto scheme = path.find("://"); scheme != std::string::npos) {
    const auto slash = path.find('/', scheme + 3);
    path = slash == std::string::npos ? "/" : path.substr(slash, path.find('?', slash) - slash);
  }
  spans_.push_back({std::string(*trace), std::string(*id), std::string(*parent), std::string(*name),
                    kind ? std::string(*kind) : std::string(), std::move(server), std::move(path),
                    *start, *end});
  return true;
}

void ReportReader::take_export(const std::string& key, ProcessExport&& data) {
  Process& p = processes_[key];
  ++input_.exports;
  // Data are cumulative, so the last export is enough, except for the peak of this last-value
  // gauge, which only the sequence of exports shows.
  if (auto active = plain_gauge(data, metric::kServersActive)) {
    p.servers_active_last = *active;
    p.servers_active_peak = std::max(p.servers_active_peak.value_or(*active), *active);
    ++p.servers_active_exports;
  }
  p.last = std::move(data);
}

TelemetryReport ReportReader::build() const {
  TelemetryReport report;
  report.input = input_;
  report.input.processes = processes_.size();
  std::vector<std::string>& notes = report.input.notes;

  std::vector<ProcessView> views;
  views.reserve(processes_.size());
  for (const auto& [k, p] : processes_) {
    views.push_back(
        {&k, &p.last, server_name_of(p.last.resource), int_attribute(p.last.resource, key::kPid)});
  }
  for (const auto& [k, p] : processes_) {
    if (!p.servers_active_last) continue;
    report.servers.push_back({server_name_of(p.last.resource), k,
                              int_attribute(p.last.resource, key::kPid), *p.servers_active_last,
                              *p.servers_active_peak, p.servers_active_exports});
  }
  report.rollouts = rollout_rows(views, notes);
  report.verification = verify_rows(views, notes);
  report.http = http_rows(views, notes);
  report.pool = pool_rows(views, notes);
  report.server_memory = server_memory_rows(views);
  report.host_memory = host_memory_rows(views);
  report.traces = trace_section(spans_);
  return report;
}

TelemetryReport read_report(std::istream& in, std::string_view source) {
  ReportReader reader;
  reader.add_stream(in, source);
  return reader.build();
}

}  // namespace gym::report
