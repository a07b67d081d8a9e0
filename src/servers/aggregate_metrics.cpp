#include "servers/aggregate_metrics.h"

#include "core/json_text.h"

#include <boost/json.hpp>
#include <boost/multiprecision/cpp_int.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace gym::servers {
namespace json = boost::json;
using python_compat::KeyError;
using python_compat::ValueError;

namespace {

constexpr std::string_view kTaskKey = "_ng_task_index";
constexpr std::string_view kRolloutKey = "_ng_rollout_index";
// Marks an absent value in a statistics column. JSON numbers are finite, so no present value is
// NaN.
constexpr double kAbsent = std::numeric_limits<double>::quiet_NaN();

// Python's isinstance(v, (bool, int, float)).
bool is_numeric(const json::value& v) {
  return v.is_bool() || v.is_int64() || v.is_uint64() || v.is_double();
}

double to_double(const json::value& v) {
  if (v.is_bool()) return v.get_bool() ? 1.0 : 0.0;
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  return v.get_double();
}

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
      if (key == kTaskKey || key == kRolloutKey || !is_numeric(v)) return;
      cols.set(key, r, rows.size(), to_double(v));
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
      if (is_numeric(kv.value())) info[kv.key()] = info_value(kv.value());
  }
  for (const auto& kv : *row.vr) {
    std::string_view key = kv.key();
    if (key == kTaskKey || key == kRolloutKey || key == "reward" || key == "response") continue;
    if (is_numeric(kv.value())) info[key] = info_value(kv.value());
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

// ---- numeric building blocks ----

namespace {

double pairwise(const double* a, std::size_t n) {
  if (n < 8) {
    double res = -0.0;
    for (std::size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {  // numpy's PW_BLOCKSIZE
    double r[8];
    for (std::size_t j = 0; j < 8; ++j) r[j] = a[j];
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (std::size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  std::size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise(a, n2) + pairwise(a + n2, n - n2);
}

// CPython's float accumulator in sum(): Neumaier's improved Kahan-Babuska summation.
class PythonSum {
 public:
  void add(double x) {
    double t = f_ + x;
    if (std::fabs(f_) >= std::fabs(x)) {
      c_ += (f_ - t) + x;
    } else {
      c_ += (x - t) + f_;
    }
    f_ = t;
  }
  double value() const { return c_ != 0.0 && std::isfinite(c_) ? f_ + c_ : f_; }

 private:
  double f_ = 0.0;
  double c_ = 0.0;
};

using BigInt = boost::multiprecision::cpp_int;

BigInt big_binomial(std::size_t n, std::size_t k) {
  k = std::min(k, n - k);
  BigInt r = 1;
  for (std::size_t i = 1; i <= k; ++i) {
    r *= n - k + i;
    r /= i;
  }
  return r;
}

// C(n, k) when it is at most 2^53 (exact as a double), else nullopt.
std::optional<std::uint64_t> small_binomial(std::size_t n, std::size_t k) {
  constexpr unsigned __int128 kLimit = static_cast<unsigned __int128>(1) << 53;
  k = std::min(k, n - k);
  unsigned __int128 r = 1;
  for (std::size_t i = 1; i <= k; ++i) {
    r = r * (n - k + i) / i;  // = C(n - k + i, i), increasing in i
    if (r > kLimit) return std::nullopt;
  }
  return static_cast<std::uint64_t>(r);
}

// a / b correctly rounded to nearest, ties to even (a, b > 0; normal range).
double rounded_quotient(const BigInt& a, const BigInt& b) {
  long shift = 55 - (static_cast<long>(boost::multiprecision::msb(a)) -
                     static_cast<long>(boost::multiprecision::msb(b)));
  BigInt num = a;
  BigInt den = b;
  if (shift >= 0) {
    num <<= shift;
  } else {
    den <<= -shift;
  }
  BigInt q, r;
  boost::multiprecision::divide_qr(num, den, q, r);  // q in [2^54, 2^56)
  const unsigned drop = static_cast<unsigned>(boost::multiprecision::msb(q)) + 1 - 53;
  const auto bits = q.convert_to<std::uint64_t>();
  std::uint64_t mantissa = bits >> drop;
  const std::uint64_t rest = bits & ((std::uint64_t{1} << drop) - 1);
  const std::uint64_t half = std::uint64_t{1} << (drop - 1);
  if (rest > half || (rest == half && (r != 0 || (mantissa & 1) != 0))) ++mantissa;
  return std::ldexp(static_cast<double>(mantissa),
                    static_cast<int>(drop) - static_cast<int>(shift));
}

}  // namespace

double numpy_pairwise_sum(std::span<const double> values) {
  return pairwise(values.data(), values.size());
}

double python_float_sum(std::span<const double> values) {
  PythonSum s;
  for (double v : values) s.add(v);
  return s.value();
}

double binomial_ratio(std::size_t bad, std::size_t n, std::size_t k) {
  if (k > bad) return 0.0;
  auto num = small_binomial(bad, k);
  auto den = small_binomial(n, k);
  if (num && den) return static_cast<double>(*num) / static_cast<double>(*den);
  return rounded_quotient(big_binomial(bad, k), big_binomial(n, k));
}

// ---- pass@k family ----

namespace {

// Python equality of two answers: numbers (and bools) by value, everything else structurally.
bool same_answer(const json::value& a, const json::value& b) {
  if (is_numeric(a) && is_numeric(b)) return to_double(a) == to_double(b);
  return a == b;
}

void set_score(Scores& scores, std::string_view name, double value) {
  for (auto& [n, v] : scores) {
    if (n == name) {
      v = value;
      return;
    }
  }
  scores.emplace_back(name, value);
}

double percent_of_mean(const std::vector<double>& values) {
  return 100.0 * python_float_sum(values) / static_cast<double>(values.size());
}

// One task's scores for one name, precomputed for every k (index k - 1).
struct TaskSeries {
  std::vector<double> pass;                // k = 1..number of scores present
  std::vector<std::optional<double>> avg;  // k = 1..max_k
  std::vector<double> majority;            // k = 1..max_k (with an answer key)
};

TaskSeries task_series(const std::vector<std::vector<std::optional<double>>>& scores,
                       const std::vector<const json::value*>& answers, std::size_t name,
                       std::size_t max_k, bool with_answers) {
  TaskSeries s;
  std::vector<double> present;
  for (const auto& rollout : scores)
    if (rollout[name]) present.push_back(*rollout[name]);

  // pass@k: combinatorial over all scores when every score is 0 or 1, else max of the first k.
  const bool binary =
      std::all_of(present.begin(), present.end(), [](double v) { return v == 0.0 || v == 1.0; });
  const auto wrong = static_cast<std::size_t>(
      std::count_if(present.begin(), present.end(), [](double v) { return v == 0.0; }));
  double running_max = -std::numeric_limits<double>::infinity();
  for (std::size_t k = 1; k <= present.size(); ++k) {
    if (binary) {
      s.pass.push_back(wrong < k ? 1.0 : 1.0 - binomial_ratio(wrong, present.size(), k));
    } else {
      running_max = k == 1 ? present[0] : std::max(running_max, present[k - 1]);
      s.pass.push_back(running_max);
    }
  }

  // pass@1[avg-of-k] and majority@k over the first k rollouts.
  PythonSum sum;
  std::size_t count = 0;
  struct Vote {
    const json::value* answer;
    double score;
    std::size_t count;
  };
  std::vector<Vote> votes;  // Counter, in first-seen order
  for (std::size_t k = 1; k <= max_k; ++k) {
    if (k <= scores.size() && scores[k - 1][name]) {
      const double score = *scores[k - 1][name];
      sum.add(score);
      ++count;
      if (with_answers && answers[k - 1] != nullptr) {
        auto it = std::find_if(votes.begin(), votes.end(), [&](const Vote& v) {
          return v.score == score && same_answer(*v.answer, *answers[k - 1]);
        });
        if (it != votes.end()) {
          ++it->count;
        } else {
          votes.push_back({answers[k - 1], score, 1});
        }
      }
    }
    s.avg.push_back(count > 0 ? std::optional<double>(sum.value() / static_cast<double>(count))
                              : std::nullopt);
    if (with_answers) {
      if (votes.empty()) {
        s.majority.push_back(0.0);
      } else {
        std::size_t top = 0;
        for (const auto& v : votes) top = std::max(top, v.count);
        std::vector<double> tied;
        for (const auto& v : votes)
          if (v.count == top) tied.push_back(v.score);
        s.majority.push_back(python_float_sum(tied) / static_cast<double>(tied.size()));
      }
    }
  }
  return s;
}

}  // namespace

Scores accuracy_from_reward(const json::object& rollout) {
  const json::value* reward = rollout.if_contains("reward");
  if (reward == nullptr) throw KeyError("'reward'");
  if (!is_numeric(*reward))
    throw ValueError("reward is not a number: " + core::render_json(*reward));
  return {{"accuracy", to_double(*reward)}};
}

PassMajorityResult compute_pass_majority_metrics(const TaskRollouts& tasks, const ScoreFn& score_fn,
                                                 std::optional<std::string_view> answer_key) {
  PassMajorityResult result;
  if (tasks.empty()) return result;
  const bool with_answers = answer_key.has_value();

  // Scores (and answers) of every rollout; `no_answer` joins the scores with an answer key.
  std::vector<std::vector<Scores>> raw(tasks.size());
  std::vector<std::vector<const json::value*>> answers(tasks.size());
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    result.max_k = std::max(result.max_k, tasks[t].size());
    for (const json::object* rollout : tasks[t]) {
      Scores scores = score_fn ? score_fn(*rollout) : accuracy_from_reward(*rollout);
      const json::value* answer = nullptr;
      if (with_answers) {
        answer = rollout->if_contains(*answer_key);
        if (answer != nullptr && answer->is_null()) answer = nullptr;
        set_score(scores, "no_answer", answer == nullptr ? 1.0 : 0.0);
      }
      raw[t].push_back(std::move(scores));
      answers[t].push_back(answer);
    }
  }
  std::vector<std::string>& names = result.score_names;
  for (const auto& task : raw)
    for (const auto& scores : task)
      for (const auto& [name, v] : scores) names.push_back(name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());

  // Dense scores: [task][rollout][name].
  std::vector<std::vector<std::vector<std::optional<double>>>> dense(tasks.size());
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    for (const auto& scores : raw[t]) {
      std::vector<std::optional<double>> row(names.size());
      for (const auto& [name, v] : scores) {
        auto pos = std::lower_bound(names.begin(), names.end(), name) - names.begin();
        row[static_cast<std::size_t>(pos)] = v;
      }
      dense[t].push_back(std::move(row));
    }
  }

  // series[name][task]
  std::vector<std::vector<TaskSeries>> series(names.size());
  for (std::size_t j = 0; j < names.size(); ++j)
    for (std::size_t t = 0; t < tasks.size(); ++t)
      series[j].push_back(task_series(dense[t], answers[t], j, result.max_k, with_answers));

  json::object& metrics = result.metrics;
  std::vector<double> values;
  for (std::size_t k = 1; k <= result.max_k; ++k) {
    const std::string ks = std::to_string(k);
    for (std::size_t j = 0; j < names.size(); ++j) {
      values.clear();
      for (const auto& s : series[j])
        if (k <= s.pass.size()) values.push_back(s.pass[k - 1]);
      if (!values.empty()) metrics["pass@" + ks + "/" + names[j]] = percent_of_mean(values);

      values.clear();
      for (const auto& s : series[j])
        if (s.avg[k - 1]) values.push_back(*s.avg[k - 1]);
      if (!values.empty())
        metrics["pass@1[avg-of-" + ks + "]/" + names[j]] = percent_of_mean(values);

      if (with_answers) {
        values.clear();
        for (const auto& s : series[j]) values.push_back(s.majority[k - 1]);
        metrics["majority@" + ks + "/" + names[j]] = percent_of_mean(values);
      }
    }
  }

  // per_sample_aggregate[name][i]: the percentage score of rollout i over the tasks that have it.
  std::vector<std::vector<double>> per_sample(names.size());
  for (std::size_t run = 0; run < result.max_k; ++run) {
    for (std::size_t j = 0; j < names.size(); ++j) {
      values.clear();
      for (const auto& task : dense)
        if (run < task.size() && task[run][j]) values.push_back(*task[run][j]);
      if (!values.empty()) per_sample[j].push_back(percent_of_mean(values));
    }
  }
  json::object per_sample_json;
  for (std::size_t j = 0; j < names.size(); ++j) {
    if (per_sample[j].empty()) continue;
    json::array a;
    for (double v : per_sample[j]) a.push_back(v);
    per_sample_json[names[j]] = std::move(a);
  }
  metrics["per_sample_aggregate"] = std::move(per_sample_json);

  // Spread of pass@1 across runs, from the first k per-sample values.
  for (std::size_t k = 2; k <= result.max_k; ++k) {
    for (std::size_t j = 0; j < names.size(); ++j) {
      const std::size_t m = std::min(k, per_sample[j].size());
      if (m < 2) continue;
      std::span<const double> runs(per_sample[j].data(), m);
      const double mean = python_float_sum(runs) / static_cast<double>(m);
      std::vector<double> squares;
      for (double x : runs) squares.push_back((x - mean) * (x - mean));
      const double std_dev = std::sqrt(python_float_sum(squares) / static_cast<double>(m - 1));
      const std::string prefix = "pass@1[avg-of-" + std::to_string(k) + "]/" + names[j];
      metrics[prefix + "/std_dev_across_runs"] = std_dev;
      metrics[prefix + "/std_err_across_runs"] = std_dev / std::sqrt(static_cast<double>(m));
    }
  }
  return result;
}

namespace {

// Compares two decimal digit strings as numbers.
bool digits_less(std::string_view a, std::string_view b) {
  auto strip = [](std::string_view s) {
    while (s.size() > 1 && s[0] == '0') s.remove_prefix(1);
    return s;
  };
  a = strip(a);
  b = strip(b);
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Matches `key` against ^<prefix>(\d+)<suffix>/(.+)$ (Python re semantics for these ASCII
// keys); returns the digits and the score name.
std::optional<std::pair<std::string_view, std::string_view>> match_k_key(std::string_view key,
                                                                         std::string_view prefix,
                                                                         std::string_view suffix) {
  if (!key.starts_with(prefix)) return std::nullopt;
  std::string_view rest = key.substr(prefix.size());
  std::size_t digits = 0;
  while (digits < rest.size() && is_digit(rest[digits])) ++digits;
  for (std::size_t len = digits; len >= 1; --len) {  // backtracking of the greedy \d+
    std::string_view after = rest.substr(len);
    if (!after.starts_with(suffix) || !after.substr(suffix.size()).starts_with('/')) continue;
    std::string_view name = after.substr(suffix.size() + 1);
    // (.+)$: no newline inside, except that $ also matches before one final newline.
    if (name.ends_with('\n')) name.remove_suffix(1);
    if (name.empty() || name.find('\n') != std::string_view::npos) continue;
    return std::make_pair(rest.substr(0, len), name);
  }
  return std::nullopt;
}

bool contains(const std::vector<std::string>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

}  // namespace

json::object highest_k_metrics(const json::object& agent_metrics, std::string_view pattern,
                               const std::optional<std::vector<std::string>>& score_names,
                               const std::optional<std::vector<std::string>>& exclude_names) {
  auto placeholder = pattern.find("{k}");
  if (placeholder == std::string_view::npos)
    throw std::invalid_argument("highest_k_metrics pattern has no {k}: " + std::string(pattern));
  const std::string_view prefix = pattern.substr(0, placeholder);
  const std::string_view suffix = pattern.substr(placeholder + 3);
  static constexpr std::string_view kStatSuffixes[] = {"std_dev_across_runs", "std_err_across_runs",
                                                       "avg_sample_std_dev"};

  std::vector<std::pair<std::string_view, const json::key_value_pair*>> matches;
  std::string_view top;
  for (const auto& kv : agent_metrics) {
    auto m = match_k_key(kv.key(), prefix, suffix);
    if (!m) continue;
    auto [k, name] = *m;
    if (std::any_of(std::begin(kStatSuffixes), std::end(kStatSuffixes),
                    [&](std::string_view s) { return name.ends_with(s); }))
      continue;
    if (score_names && !contains(*score_names, name)) continue;
    if (exclude_names && contains(*exclude_names, name)) continue;
    if (matches.empty() || digits_less(top, k)) top = k;
    matches.emplace_back(k, &kv);
  }
  json::object out;
  for (const auto& [k, kv] : matches)
    if (!digits_less(k, top) && !digits_less(top, k)) out[kv->key()] = kv->value();
  return out;
}

}  // namespace gym::servers
