#include "servers/aggregate_metrics.h"

#include "core/json_text.h"
#include "python_compat/json.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace gym::servers {
namespace json = boost::json;
using python_compat::KeyError;
using python_compat::py_float_of;
using python_compat::py_is_number;
using python_compat::ValueError;

namespace {

constexpr std::string_view kTaskKey = "_ng_task_index";
constexpr std::string_view kRolloutKey = "_ng_rollout_index";
// Marks an absent value in a statistics column. JSON numbers are finite, so no present value is
// NaN.
constexpr double kAbsent = std::numeric_limits<double>::quiet_NaN();

// A rollout_infos value: bools as 0/1, numbers in their original type.
json::value info_value(const json::value& v) {
  if (v.is_bool()) return json::value(std::int64_t{v.get_bool() ? 1 : 0});
  return v;
}

// `_ng_task_index` / `_ng_rollout_index` of a verify response; missing -> 0.
std::int64_t index_of(const json::object& vr, std::string_view key) {
  const json::value* v = vr.if_contains(key);
  if (v == nullptr) return 0;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
    return static_cast<std::int64_t>(v->get_uint64());
  throw ValueError(std::string(key) + " must be an integer, got " + core::render_json(*v));
}

struct Row {
  std::int64_t task = 0;
  std::int64_t rollout = 0;
  const json::object* vr = nullptr;
  const json::object* usage = nullptr;  // response.usage when it is an object
};

const json::object* usage_of(const json::object& vr) {
  const json::value* response = vr.if_contains("response");
  if (response == nullptr || !response->is_object()) return nullptr;
  const json::value* usage = response->get_object().if_contains("usage");
  return usage != nullptr && usage->is_object() ? &usage->get_object() : nullptr;
}

// Validates, checks identities for duplicates (in input order, as upstream) and sorts by
// (task, rollout).
std::vector<Row> sorted_rows(const json::array& verify_responses) {
  std::vector<Row> rows;
  rows.reserve(verify_responses.size());
  struct PairHash {
    std::size_t operator()(const std::pair<std::int64_t, std::int64_t>& p) const {
      return std::hash<std::int64_t>{}(p.first) * 1000003u ^ std::hash<std::int64_t>{}(p.second);
    }
  };
  std::unordered_set<std::pair<std::int64_t, std::int64_t>, PairHash> seen;
  for (std::size_t i = 0; i < verify_responses.size(); ++i) {
    const json::value& v = verify_responses[i];
    if (!v.is_object())
      throw ValueError("verify_responses[" + std::to_string(i) + "] is not an object");
    const json::object& vr = v.get_object();
    Row row{index_of(vr, kTaskKey), index_of(vr, kRolloutKey), &vr, usage_of(vr)};
    if (!seen.emplace(row.task, row.rollout).second) {
      throw ValueError("Duplicate materialized input row for rollout key (" +
                       std::to_string(row.task) + ", " + std::to_string(row.rollout) + ")");
    }
    rows.push_back(row);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.task != b.task ? a.task < b.task : a.rollout < b.rollout;
  });
  return rows;
}

// The numeric records as columns: one per field, in first-appearance order over the sorted rows.
struct Columns {
  std::vector<std::string> names;
  std::vector<std::vector<double>> values;  // values[field][row]; kAbsent when absent
  std::unordered_map<std::string, std::size_t> index;

  void set(std::string_view name, std::size_t row, std::size_t num_rows, double v) {
    auto [it, inserted] = index.try_emplace(std::string(name), names.size());
    if (inserted) {
      names.emplace_back(name);
      values.emplace_back(num_rows, kAbsent);
    }
    values[it->second][row] = v;
  }
};

// Every top-level bool or number, with response.usage's numbers overriding same-named fields
// (upstream `result | usage`: an overriding key keeps the top-level key's position).
Columns numeric_columns(const std::vector<Row>& rows) {
  Columns cols;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Row& row = rows[r];
    auto consider = [&](std::string_view key, const json::value& v) {
      if (key == kTaskKey || key == kRolloutKey || !py_is_number(v)) return;
      cols.set(key, r, rows.size(), py_float_of(v));
    };
    for (const auto& kv : *row.vr) {
      const json::value* v = &kv.value();
      if (row.usage != nullptr) {
        if (const json::value* u = row.usage->if_contains(kv.key())) v = u;
      }
      consider(kv.key(), *v);
    }
    if (row.usage != nullptr) {
      for (const auto& kv : *row.usage)
        if (!row.vr->contains(kv.key())) consider(kv.key(), kv.value());
    }
  }
  return cols;
}

struct FieldStats {
  double mean = kAbsent, max = kAbsent, min = kAbsent, median = kAbsent, stdev = kAbsent;
  bool complete = false;  // present in every row of the set
};

// pandas' mean/max/min/median/std of one column over rows [begin, end): sums are numpy pairwise
// sums over the column with absent values as 0; std is the two-pass sample std (ddof 1).
FieldStats field_stats(const std::vector<double>& column, std::size_t begin, std::size_t end) {
  FieldStats s;
  std::vector<double> filled;
  std::vector<double> present;
  filled.reserve(end - begin);
  present.reserve(end - begin);
  for (std::size_t i = begin; i < end; ++i) {
    double v = column[i];
    if (std::isnan(v)) {
      filled.push_back(0.0);
    } else {
      filled.push_back(v);
      present.push_back(v);
    }
  }
  const std::size_t count = present.size();
  s.complete = count == end - begin;
  if (count == 0) return s;
  const double n = static_cast<double>(count);
  s.mean = numpy_pairwise_sum(filled) / n;
  s.max = *std::max_element(present.begin(), present.end());
  s.min = *std::min_element(present.begin(), present.end());
  std::sort(present.begin(), present.end());
  s.median =
      count % 2 == 1 ? present[count / 2] : (present[count / 2 - 1] + present[count / 2]) / 2.0;
  if (count > 1) {
    std::vector<double> squares(filled.size(), 0.0);
    for (std::size_t i = 0; i < filled.size(); ++i) {
      if (std::isnan(column[begin + i])) continue;
      double d = s.mean - filled[i];
      squares[i] = d * d;
    }
    s.stdev = std::sqrt(numpy_pairwise_sum(squares) / (n - 1.0));
  }
  return s;
}

// Appends `<stat>/<field>` entries for rows [begin, end): stat-major, fields in column order,
// undefined values omitted; when every std is undefined, complete fields get std 0.0.
void describe(const Columns& cols, std::size_t begin, std::size_t end, json::object& out) {
  std::vector<FieldStats> stats;
  stats.reserve(cols.names.size());
  bool every_std_undefined = true;
  for (const auto& column : cols.values) {
    stats.push_back(field_stats(column, begin, end));
    if (!std::isnan(stats.back().stdev)) every_std_undefined = false;
  }
  if (every_std_undefined) {
    for (auto& s : stats)
      if (s.complete) s.stdev = 0.0;
  }
  static constexpr std::pair<const char*, double FieldStats::*> kStats[] = {
      {"mean", &FieldStats::mean},     {"max", &FieldStats::max},   {"min", &FieldStats::min},
      {"median", &FieldStats::median}, {"std", &FieldStats::stdev},
  };
  for (const auto& [stat, member] : kStats) {
    for (std::size_t f = 0; f < stats.size(); ++f) {
      double v = stats[f].*member;
      if (!std::isnan(v)) out[std::string(stat) + "/" + cols.names[f]] = v;
    }
  }
}

json::object rollout_info(const Row& row) {
  json::object info;
  info["rollout_id"] = std::to_string(row.task) + ":" + std::to_string(row.rollout);
  info[kTaskKey] = row.task;
  info[kRolloutKey] = row.rollout;
  if (const json::value* reward = row.vr->if_contains("reward")) info["reward"] = *reward;
  if (row.usage != nullptr) {
    for (const auto& kv : *row.usage)
      if (py_is_number(kv.value())) info[kv.key()] = info_value(kv.value());
  }
  for (const auto& kv : *row.vr) {
    std::string_view key = kv.key();
    if (key == kTaskKey || key == kRolloutKey || key == "reward" || key == "response") continue;
    if (py_is_number(kv.value())) info[key] = info_value(kv.value());
  }
  return info;
}

// Merges a hook's `per_task_metrics` into the groups with the same task index.
void merge_per_task_metrics(const json::value& per_task, json::array& groups) {
  if (!per_task.is_array()) return;
  std::unordered_map<std::int64_t, const json::object*> by_task;
  for (const auto& m : per_task.get_array()) {
    if (!m.is_object() || !m.get_object().contains(kTaskKey))
      throw KeyError("'" + std::string(kTaskKey) + "'");
    by_task[index_of(m.get_object(), kTaskKey)] = &m.get_object();
  }
  for (auto& g : groups) {
    auto& group = g.get_object();
    auto it = by_task.find(group.at(kTaskKey).get_int64());
    if (it == by_task.end()) continue;
    for (const auto& kv : *it->second)
      if (kv.key() != kTaskKey) group[kv.key()] = kv.value();
  }
}

}  // namespace

json::object compute_aggregate_metrics(const json::array& verify_responses,
                                       const AggregateMetricsHooks& hooks) {
  json::object result;
  result["group_level_metrics"] = json::array{};
  result["agent_metrics"] = json::object{};
  result["key_metrics"] = json::object{};
  if (verify_responses.empty()) return result;

  const std::vector<Row> rows = sorted_rows(verify_responses);
  const Columns cols = numeric_columns(rows);

  json::array groups;
  TaskRollouts tasks;
  for (std::size_t begin = 0; begin < rows.size();) {
    std::size_t end = begin;
    while (end < rows.size() && rows[end].task == rows[begin].task) ++end;
    json::object group;
    group[kTaskKey] = rows[begin].task;
    describe(cols, begin, end, group);
    group["sample"] = json::object{{"agent_ref", json::object{{"name", "agent"}}}};
    const auto n = static_cast<std::int64_t>(end - begin);
    group["num_rollouts"] = n;
    group["expected_num_rollouts"] = n;
    group["missing_num_rollouts"] = 0;
    group["reward_profile_completion_pct"] = 100.0;
    json::array infos;
    std::vector<const json::object*> task_rollouts;
    for (std::size_t r = begin; r < end; ++r) {
      infos.push_back(rollout_info(rows[r]));
      task_rollouts.push_back(rows[r].vr);
    }
    group["rollout_infos"] = std::move(infos);
    groups.push_back(std::move(group));
    tasks.push_back(std::move(task_rollouts));
    begin = end;
  }

  json::object agent_metrics;
  describe(cols, 0, rows.size(), agent_metrics);

  if (hooks.compute_metrics) {
    json::object custom = hooks.compute_metrics(tasks);
    for (const auto& kv : custom) {
      if (kv.key() == "per_task_metrics") {
        merge_per_task_metrics(kv.value(), groups);
      } else {
        agent_metrics[kv.key()] = kv.value();
      }
    }
  }
  json::object key_metrics =
      hooks.key_metrics ? hooks.key_metrics(agent_metrics) : default_key_metrics(agent_metrics);

  result["group_level_metrics"] = std::move(groups);
  result["agent_metrics"] = std::move(agent_metrics);
  result["key_metrics"] = std::move(key_metrics);
  return result;
}

json::object default_key_metrics(const json::object& agent_metrics) {
  json::object key;
  for (const auto& kv : agent_metrics)
    if (kv.key().starts_with("mean/")) key[kv.key()] = kv.value();
  return key;
}

}  // namespace gym::servers
