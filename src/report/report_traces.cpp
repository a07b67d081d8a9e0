// The trace section of `gym telemetry report`: where the slowest rollouts spend their time,
// from the spans the console exporter wrote (docs/guides/telemetry-report.md).
#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace gym::report {

namespace {

// The exact nearest-rank percentile of sorted values (q in (0, 1]).
double nearest_rank(const std::vector<double>& sorted, double q) {
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

TraceSection ReportReader::trace_section(const std::vector<SpanRecord>& spans) {
  TraceSection out;
  out.spans = spans.size();
  auto ms = [](const SpanRecord& s) { return static_cast<double>(s.end - s.start) / 1e6; };
  // Children by (trace, parent span id).
  std::map<std::pair<std::string_view, std::string_view>, std::vector<const SpanRecord*>> children;
  std::set<std::string_view> traces;
  std::vector<const SpanRecord*> rollouts;
  for (const auto& s : spans) {
    traces.insert(s.trace_id);
    if (!s.parent_span_id.empty()) children[{s.trace_id, s.parent_span_id}].push_back(&s);
    if (s.name == "gym.rollout") rollouts.push_back(&s);
  }
  out.traces = traces.size();
  out.rollouts = rollouts.size();
  if (rollouts.empty()) return out;
  std::vector<double> walls;
  for (const auto* r : rollouts) walls.push_back(ms(*r));
  std::sort(walls.begin(), walls.end());
  out.rollout_p50_ms = nearest_rank(walls, 0.5);
  out.rollout_p99_ms = nearest_rank(walls, 0.99);
  out.slow_threshold_ms = nearest_rank(walls, 0.9);
  // What a span's row is called: a CLIENT span's also says where the call went.
  auto label = [&](const SpanRecord& s) {
    if (s.kind != "client") return s.name;
    std::string out = s.name;
    if (!s.path.empty()) out += " " + s.path;
    if (auto it = children.find({s.trace_id, s.span_id}); it != children.end()) {
      for (const auto* c : it->second) {
        if (c->kind == "server" && !c->server.empty()) {
          out += " -> " + c->server;
          break;
        }
      }
    }
    return out;
  };
  // Every span inside the slowest rollouts, by (label, kind, server).
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<double>> by_name;
  double wall_total = 0;
  for (const auto* r : rollouts) {
    if (ms(*r) < *out.slow_threshold_ms) continue;
    ++out.slow_rollouts;
    wall_total += ms(*r);
    std::vector<const SpanRecord*> stack{r};
    while (!stack.empty()) {
      const SpanRecord* s = stack.back();
      stack.pop_back();
      if (s != r) by_name[{label(*s), s->kind, s->server}].push_back(ms(*s));
      if (auto it = children.find({s->trace_id, s->span_id}); it != children.end())
        for (const auto* c : it->second) stack.push_back(c);
    }
  }
  for (auto& [key, durations] : by_name) {
    std::sort(durations.begin(), durations.end());
    double total = 0;
    for (double d : durations) total += d;
    out.rows.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), durations.size(),
                        nearest_rank(durations, 0.5), nearest_rank(durations, 0.99),
                        wall_total > 0 ? total / wall_total : 0});
  }
  std::stable_sort(out.rows.begin(), out.rows.end(),
                   [](const SpanTimeRow& a, const SpanTimeRow& b) { return a.share > b.share; });
  return out;
}

}  // namespace gym::report
