#include "telemetry/traces/span_groups.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "telemetry/common/env.h"

namespace gym::telemetry {

namespace {

constexpr std::array<std::pair<std::string_view, SpanGroup>, kSpanGroupCount> kGroups{{
    {"job", SpanGroup::job},
    {"server", SpanGroup::server},
    {"http_client", SpanGroup::http_client},
    {"rollout", SpanGroup::rollout},
    {"agent", SpanGroup::agent},
    {"model_call", SpanGroup::model_call},
    {"verify", SpanGroup::verify},
    {"sandbox", SpanGroup::sandbox},
}};
// Accepted for compatibility with upstream's telemetry library; never emitted.
constexpr std::array<std::string_view, 7> kInheritedGroups{
    "checkpoint", "evaluate",         "model_init", "load_checkpoint",
    "step",       "forward_backward", "optimizer"};

std::string valid_group_names() {
  std::vector<std::string_view> names{"default", "per_rollout", "all"};
  for (const auto& [n, _] : kGroups) names.push_back(n);
  for (auto n : kInheritedGroups) names.push_back(n);
  std::sort(names.begin(), names.end());
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

SpanGroups resolve_span_groups(std::string_view spec, std::string_view source) {
  SpanGroups out;
  std::size_t start = 0;
  while (start <= spec.size()) {
    std::size_t comma = spec.find(',', start);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string name = lowercase(trimmed(spec.substr(start, comma - start)));
    start = comma + 1;
    if (name.empty()) continue;
    if (name == "default") {
      for (auto g :
           {SpanGroup::job, SpanGroup::server, SpanGroup::http_client, SpanGroup::rollout}) {
        out.add(g);
      }
    } else if (name == "per_rollout") {
      for (auto g : {SpanGroup::server, SpanGroup::http_client, SpanGroup::rollout,
                     SpanGroup::verify, SpanGroup::agent, SpanGroup::model_call}) {
        out.add(g);
      }
    } else if (name == "all") {
      for (const auto& [_, g] : kGroups) out.add(g);
    } else if (auto it = std::find_if(kGroups.begin(), kGroups.end(),
                                      [&](const auto& p) { return p.first == name; });
               it != kGroups.end()) {
      out.add(it->second);
    } else if (std::find(kInheritedGroups.begin(), kInheritedGroups.end(), name) ==
               kInheritedGroups.end()) {
      throw core::ConfigError(
          fmt::format("config error: unknown span group or preset '{}' in {}; "
                      "valid names: {}",
                      name, source, valid_group_names()));
    }
  }
  return out;
}

}  // namespace gym::telemetry
