// The report as text and as JSON: rendering only, from TelemetryReport.
#include "report/report_format.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <boost/json.hpp>

namespace gym::report {
namespace json = boost::json;

namespace {

std::string format_ms(double ms) {
  const double a = std::fabs(ms);
  const int decimals = a < 1 ? 3 : a < 10 ? 2 : a < 100 ? 1 : 0;
  return fmt::format("{:.{}f}", ms, decimals);
}

std::string format_percentile(const std::optional<PercentileEstimate>& p, double to_ms) {
  if (!p) return "-";
  return (p->above_last_bound ? ">" : "") + format_ms(p->value * to_ms);
}

std::string format_bytes(std::int64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes > -1024 && bytes < 1024) return fmt::format("{} B", bytes);
  double v = static_cast<double>(bytes);
  std::size_t unit = 0;
  v /= 1024;
  while (std::fabs(v) >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

std::string format_optional_bytes(const std::optional<std::int64_t>& b) {
  return b ? format_bytes(*b) : "-";
}

std::string format_pid(const std::optional<std::int64_t>& pid) {
  return pid ? std::to_string(*pid) : "-";
}

enum class Align { left, right };

// Rows of cells under a header, each column as wide as its widest cell. A group line (e.g. a
// server name) stands above the rows that follow it, whose first cells are indented under it,
// which keeps two long name columns from pushing the figures past the terminal's width.
class TextTable {
 public:
  struct Column {
    std::string header;
    Align align;
  };

  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

  void add_group(std::string title) { rows_.push_back({{}, std::move(title)}); }

  void add_row(std::vector<std::string> cells) {
    cells.resize(columns_.size());
    if (std::any_of(rows_.begin(), rows_.end(), [](const Row& r) { return r.group; })) {
      cells[0] = "  " + cells[0];
    }
    rows_.push_back({std::move(cells), std::nullopt});
  }

  void render(std::string& out) const {
    std::vector<std::size_t> width(columns_.size());
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      width[c] = columns_[c].header.size();
      for (const Row& row : rows_) {
        if (!row.group) width[c] = std::max(width[c], row.cells[c].size());
      }
    }
    auto line = [&](const std::vector<std::string>& cells) {
      std::string text = "  ";
      for (std::size_t c = 0; c < columns_.size(); ++c) {
        const std::string pad(width[c] - cells[c].size(), ' ');
        text += columns_[c].align == Align::left ? cells[c] + pad : pad + cells[c];
        if (c + 1 < columns_.size()) text += "  ";
      }
      while (!text.empty() && text.back() == ' ') text.pop_back();
      out += text;
      out += '\n';
    };
    std::vector<std::string> headers;
    for (const Column& c : columns_) headers.push_back(c.header);
    line(headers);
    for (const Row& row : rows_) {
      if (row.group) {
        out += "  " + *row.group + "\n";
      } else {
        line(row.cells);
      }
    }
  }

 private:
  struct Row {
    std::vector<std::string> cells;
    std::optional<std::string> group;
  };

  std::vector<Column> columns_;
  std::vector<Row> rows_;
};

void no_data(std::string& out, std::string_view section) {
  out += fmt::format("{}: no data\n", section);
}

void format_input(std::string& out, const ReportInput& in) {
  out += fmt::format("telemetry report: {} metrics export{} from {} process{}\n", in.exports,
                     in.exports == 1 ? "" : "s", in.processes, in.processes == 1 ? "" : "es");
  if (in.span_lines > 0)
    out += fmt::format("spans: {} span line{}\n", in.span_lines, in.span_lines == 1 ? "" : "s");
  std::string skipped;
  if (in.other_lines > 0) skipped += fmt::format("{} not metrics or spans", in.other_lines);
  if (in.malformed_lines > 0) {
    if (!skipped.empty()) skipped += ", ";
    skipped += fmt::format("{} malformed", in.malformed_lines);
  }
  out += fmt::format("input: {} line{} read{}\n", in.lines, in.lines == 1 ? "" : "s",
                     skipped.empty() ? std::string() : "; skipped " + skipped);
  for (const std::string& e : in.malformed_examples) out += fmt::format("  malformed: {}\n", e);
  if (in.malformed_lines > in.malformed_examples.size()) {
    out += fmt::format("  ({} more malformed lines)\n",
                       in.malformed_lines - in.malformed_examples.size());
  }
  for (const std::string& n : in.notes) out += fmt::format("  note: {}\n", n);
}

void format_servers(std::string& out, const std::vector<ServersActiveRow>& rows) {
  if (rows.empty()) return no_data(out, "servers");
  out += "servers (gym.servers.active)\n";
  TextTable t({{"process", Align::left},
               {"pid", Align::right},
               {"last", Align::right},
               {"peak", Align::right},
               {"exports", Align::right}});
  for (const auto& r : rows) {
    t.add_row({r.server, format_pid(r.pid), std::to_string(r.last), std::to_string(r.peak),
               std::to_string(r.exports)});
  }
  t.render(out);
  // A run shorter than the export interval exports only at shutdown, after the value went to 0.
  if (std::any_of(rows.begin(), rows.end(), [](const auto& r) { return r.peak == 0; })) {
    out += "  peak 0: no export saw the servers running (a run shorter than the export interval)\n";
  }
}

void format_rollouts(std::string& out, const std::vector<RolloutRow>& rows) {
  if (rows.empty()) return no_data(out, "rollouts");
  out += "rollouts (gym.rollout.duration_ms)\n";
  TextTable t({{"agent server", Align::left},
               {"procs", Align::right},
               {"count", Align::right},
               {"p50 ms", Align::right},
               {"p95 ms", Align::right},
               {"p99 ms", Align::right}});
  for (const auto& r : rows) {
    const DurationSummary& d = r.duration_ms;
    t.add_row({r.server, std::to_string(r.processes), std::to_string(d.histogram.count),
               format_percentile(d.p50, 1), format_percentile(d.p95, 1),
               format_percentile(d.p99, 1)});
  }
  t.render(out);
}

void format_verification(std::string& out, const std::vector<VerifyRow>& rows) {
  if (rows.empty()) return no_data(out, "verification");
  out += "verification (gym.verify.duration_ms, gym.verify.success_rate)\n";
  TextTable t({{"resources server", Align::left},
               {"procs", Align::right},
               {"count", Align::right},
               {"p50 ms", Align::right},
               {"p95 ms", Align::right},
               {"p99 ms", Align::right},
               {"success rate by pid", Align::left}});
  for (const auto& r : rows) {
    std::string rates;
    for (const auto& s : r.success_rates) {
      if (!rates.empty()) rates += ", ";
      rates += fmt::format("{} {:.3f}", format_pid(s.pid), s.value);
    }
    if (rates.empty()) rates = "-";
    if (r.duration_ms) {
      const DurationSummary& d = *r.duration_ms;
      t.add_row({r.server, std::to_string(r.processes), std::to_string(d.histogram.count),
                 format_percentile(d.p50, 1), format_percentile(d.p95, 1),
                 format_percentile(d.p99, 1), rates});
    } else {
      t.add_row({r.server, std::to_string(r.processes), "-", "-", "-", "-", rates});
    }
  }
  t.render(out);
}

void format_http(std::string& out, const std::vector<HttpRow>& rows) {
  if (rows.empty()) return no_data(out, "http");
  out += "http (http.server.request.duration)\n";
  TextTable t({{"server / route", Align::left},
               {"count", Align::right},
               {"p50 ms", Align::right},
               {"p99 ms", Align::right},
               {"5xx", Align::right}});
  const std::string* server = nullptr;
  for (const auto& r : rows) {
    if (!server || *server != r.server) t.add_group(r.server);
    server = &r.server;
    const DurationSummary& d = r.duration_s;
    t.add_row({r.route.empty() ? "(no route)" : r.route, std::to_string(d.histogram.count),
               format_percentile(d.p50, 1000), format_percentile(d.p99, 1000),
               std::to_string(r.server_errors)});
  }
  t.render(out);
}

void format_pool(std::string& out, const std::vector<PoolRow>& rows) {
  if (rows.empty()) return no_data(out, "connection pool");
  out += "connection pool (gym.http.connection_pool.*)\n";
  TextTable t({{"process / destination", Align::left},
               {"connections", Align::right},
               {"queued", Align::right},
               {"share", Align::right},
               {"queue p99 ms", Align::right},
               {"abandoned", Align::right}});
  const std::string* server = nullptr;
  for (const auto& r : rows) {
    if (!server || *server != r.server) t.add_group(r.server);
    server = &r.server;
    t.add_row({r.destination, r.connections ? std::to_string(*r.connections) : std::string("-"),
               std::to_string(r.queued),
               r.queued_share ? fmt::format("{:.1f}%", *r.queued_share * 100) : std::string("-"),
               format_percentile(r.queue_p99_ms, 1), std::to_string(r.abandoned)});
  }
  t.render(out);
}

void format_memory(std::string& out, const std::vector<ServerMemoryRow>& servers,
                   const std::vector<HostMemoryRow>& hosts) {
  if (servers.empty() && hosts.empty()) return no_data(out, "memory");
  out += "memory (gym.server.memory.*, gym.server.processes, gym.host.memory.*)\n";
  if (!servers.empty()) {
    TextTable t({{"server", Align::left},
                 {"root pid", Align::right},
                 {"procs", Align::right},
                 {"rss", Align::right},
                 {"rss peak", Align::right},
                 {"pss", Align::right},
                 {"pss peak", Align::right}});
    for (const auto& r : servers) {
      t.add_row({r.server, format_pid(r.root_pid),
                 r.processes ? std::to_string(*r.processes) : std::string("-"),
                 format_optional_bytes(r.rss_bytes), format_optional_bytes(r.rss_peak_bytes),
                 format_optional_bytes(r.pss_bytes), format_optional_bytes(r.pss_peak_bytes)});
    }
    t.render(out);
  }
  for (const auto& h : hosts) {
    out +=
        fmt::format("  host {}: usage {}, available {}, total {}, sampled peak {}\n", h.host,
                    format_optional_bytes(h.usage_bytes), format_optional_bytes(h.available_bytes),
                    format_optional_bytes(h.total_bytes), format_optional_bytes(h.peak_bytes));
  }
}

// ---- JSON ----

json::value optional_json(const std::optional<std::int64_t>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

json::value percentile_json(const std::optional<PercentileEstimate>& p, double to_ms) {
  if (!p) return nullptr;
  return json::object{{"value", p->value * to_ms}, {"above_last_bound", p->above_last_bound}};
}

// Appends a duration summary's fields to `o`, converted to milliseconds.
void add_duration_json(json::object& o, const DurationSummary& d, double to_ms) {
  const BucketHistogram& h = d.histogram;
  o.emplace("count", h.count);
  o.emplace("sum_ms", h.sum * to_ms);
  o.emplace("min_ms", h.min ? json::value(*h.min * to_ms) : json::value(nullptr));
  o.emplace("max_ms", h.max ? json::value(*h.max * to_ms) : json::value(nullptr));
  o.emplace("p50_ms", percentile_json(d.p50, to_ms));
  o.emplace("p95_ms", percentile_json(d.p95, to_ms));
  o.emplace("p99_ms", percentile_json(d.p99, to_ms));
}

}  // namespace

namespace {

void format_traces(std::string& out, const TraceSection& t) {
  if (t.spans == 0) return no_data(out, "traces");
  out += fmt::format("traces: {} span{} in {} trace{}, {} rollout{} (gym.rollout)\n", t.spans,
                     t.spans == 1 ? "" : "s", t.traces, t.traces == 1 ? "" : "s", t.rollouts,
                     t.rollouts == 1 ? "" : "s");
  if (t.rollouts == 0) {
    out +=
        "  no gym.rollout spans: enable the `rollout` span group to see where rollouts spend "
        "their time\n";
    return;
  }
  out += fmt::format(
      "rollout wall time p50 {} ms, p99 {} ms; the slowest {} (>= p90, {} ms) spent it in:\n",
      format_ms(*t.rollout_p50_ms), format_ms(*t.rollout_p99_ms), t.slow_rollouts,
      format_ms(*t.slow_threshold_ms));
  TextTable table({{"span", Align::left},
                   {"kind", Align::left},
                   {"server", Align::left},
                   {"count", Align::right},
                   {"p50 ms", Align::right},
                   {"p99 ms", Align::right},
                   {"share", Align::right}});
  for (const auto& r : t.rows)
    table.add_row({r.name, r.kind, r.server, std::to_string(r.count), format_ms(r.p50_ms),
                   format_ms(r.p99_ms), fmt::format("{:.1f}%", r.share * 100)});
  table.render(out);
  out +=
      "  (share: time inside such spans over the rollouts' wall time; nested spans overlap;\n"
      "   a client span names the path it called and the server that answered)\n";
}

}  // namespace

std::string format_report(const TelemetryReport& r) {
  std::string out;
  format_input(out, r.input);
  out += '\n';
  format_servers(out, r.servers);
  out += '\n';
  format_rollouts(out, r.rollouts);
  out += '\n';
  format_verification(out, r.verification);
  out += '\n';
  format_http(out, r.http);
  out += '\n';
  format_pool(out, r.pool);
  out += '\n';
  format_memory(out, r.server_memory, r.host_memory);
  out += '\n';
  format_traces(out, r.traces);
  return out;
}

namespace {

json::value optional_ms(const std::optional<double>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

json::object traces_json(const TraceSection& t) {
  json::array rows;
  for (const auto& r : t.rows)
    rows.push_back(json::object{{"name", r.name},
                                {"kind", r.kind},
                                {"server", r.server},
                                {"count", r.count},
                                {"p50_ms", r.p50_ms},
                                {"p99_ms", r.p99_ms},
                                {"share", r.share}});
  return json::object{{"spans", t.spans},
                      {"traces", t.traces},
                      {"rollouts", t.rollouts},
                      {"slow_rollouts", t.slow_rollouts},
                      {"rollout_p50_ms", optional_ms(t.rollout_p50_ms)},
                      {"rollout_p99_ms", optional_ms(t.rollout_p99_ms)},
                      {"slow_threshold_ms", optional_ms(t.slow_threshold_ms)},
                      {"spans_in_slowest_rollouts", std::move(rows)}};
}

}  // namespace

json::value report_json(const TelemetryReport& r) {
  json::array malformed(r.input.malformed_examples.begin(), r.input.malformed_examples.end());
  json::array notes(r.input.notes.begin(), r.input.notes.end());
  json::object input{{"lines", r.input.lines},
                     {"exports", r.input.exports},
                     {"processes", r.input.processes},
                     {"span_lines", r.input.span_lines},
                     {"other_lines", r.input.other_lines},
                     {"malformed_lines", r.input.malformed_lines},
                     {"malformed_examples", std::move(malformed)},
                     {"notes", std::move(notes)}};

  json::array servers;
  for (const auto& s : r.servers) {
    servers.push_back(json::object{{"server", s.server},
                                   {"instance_id", s.instance_id},
                                   {"pid", optional_json(s.pid)},
                                   {"last", s.last},
                                   {"peak", s.peak},
                                   {"exports", s.exports}});
  }
  json::array rollouts;
  for (const auto& row : r.rollouts) {
    json::object o{{"server", row.server}, {"processes", row.processes}};
    add_duration_json(o, row.duration_ms, 1);
    rollouts.push_back(std::move(o));
  }
  json::array verification;
  for (const auto& row : r.verification) {
    json::array rates;
    for (const auto& s : row.success_rates) {
      rates.push_back(json::object{
          {"instance_id", s.instance_id}, {"pid", optional_json(s.pid)}, {"value", s.value}});
    }
    json::value duration = nullptr;
    if (row.duration_ms) {
      json::object d;
      add_duration_json(d, *row.duration_ms, 1);
      duration = std::move(d);
    }
    verification.push_back(json::object{{"server", row.server},
                                        {"processes", row.processes},
                                        {"duration", std::move(duration)},
                                        {"success_rates", std::move(rates)}});
  }
  json::array http;
  for (const auto& row : r.http) {
    json::object o{{"server", row.server},
                   {"route", row.route.empty() ? json::value(nullptr) : json::value(row.route)}};
    add_duration_json(o, row.duration_s, 1000);
    o.emplace("server_errors", row.server_errors);
    http.push_back(std::move(o));
  }
  json::array pool;
  for (const auto& row : r.pool) {
    pool.push_back(json::object{
        {"server", row.server},
        {"destination", row.destination},
        {"connections", optional_json(row.connections)},
        {"queued", row.queued},
        {"queued_share", row.queued_share ? json::value(*row.queued_share) : json::value(nullptr)},
        {"queue_p99_ms", percentile_json(row.queue_p99_ms, 1)},
        {"abandoned", row.abandoned}});
  }
  json::array server_memory;
  for (const auto& row : r.server_memory) {
    server_memory.push_back(json::object{{"server", row.server},
                                         {"server_type", row.server_type},
                                         {"root_pid", optional_json(row.root_pid)},
                                         {"processes", optional_json(row.processes)},
                                         {"rss_bytes", optional_json(row.rss_bytes)},
                                         {"rss_peak_bytes", optional_json(row.rss_peak_bytes)},
                                         {"pss_bytes", optional_json(row.pss_bytes)},
                                         {"pss_peak_bytes", optional_json(row.pss_peak_bytes)}});
  }
  json::array hosts;
  for (const auto& h : r.host_memory) {
    hosts.push_back(json::object{{"host", h.host},
                                 {"usage_bytes", optional_json(h.usage_bytes)},
                                 {"available_bytes", optional_json(h.available_bytes)},
                                 {"total_bytes", optional_json(h.total_bytes)},
                                 {"peak_bytes", optional_json(h.peak_bytes)}});
  }
  return json::object{
      {"input", std::move(input)},
      {"servers", std::move(servers)},
      {"rollouts", std::move(rollouts)},
      {"verification", std::move(verification)},
      {"http", std::move(http)},
      {"connection_pool", std::move(pool)},
      {"memory", json::object{{"servers", std::move(server_memory)}, {"hosts", std::move(hosts)}}},
      {"traces", traces_json(r.traces)},
  };
}

}  // namespace gym::report
