// The pass@k family of /aggregate_metrics (upstream's compute_pass_majority_metrics and
// highest_k_metrics) and the numeric building blocks that make its figures equal upstream's.
#include "servers/aggregate_metrics.h"

#include "core/json_text.h"
#include "python_compat/json.h"

#include <boost/json.hpp>
#include <boost/multiprecision/cpp_int.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace gym::servers {
namespace json = boost::json;
using python_compat::KeyError;
using python_compat::py_float_of;
using python_compat::py_is_number;
using python_compat::ValueError;

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
  if (py_is_number(a) && py_is_number(b)) return py_float_of(a) == py_float_of(b);
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
  if (!py_is_number(*reward))
    throw ValueError("reward is not a number: " + core::render_json(*reward));
  return {{"accuracy", py_float_of(*reward)}};
}

namespace {

// Every rollout's scores and (with an answer key) answer, [task][rollout]; `no_answer` joins the
// scores when there is an answer key.
struct RolloutScores {
  std::vector<std::vector<Scores>> scores;
  std::vector<std::vector<const json::value*>> answers;
};

RolloutScores score_rollouts(const TaskRollouts& tasks, const ScoreFn& score_fn,
                             std::optional<std::string_view> answer_key) {
  RolloutScores out;
  out.scores.resize(tasks.size());
  out.answers.resize(tasks.size());
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    for (const json::object* rollout : tasks[t]) {
      Scores scores = score_fn ? score_fn(*rollout) : accuracy_from_reward(*rollout);
      const json::value* answer = nullptr;
      if (answer_key) {
        answer = rollout->if_contains(*answer_key);
        if (answer != nullptr && answer->is_null()) answer = nullptr;
        set_score(scores, "no_answer", answer == nullptr ? 1.0 : 0.0);
      }
      out.scores[t].push_back(std::move(scores));
      out.answers[t].push_back(answer);
    }
  }
  return out;
}

// The score names of every rollout, sorted, each once.
std::vector<std::string> score_names(const std::vector<std::vector<Scores>>& scores) {
  std::vector<std::string> names;
  for (const auto& task : scores)
    for (const auto& rollout : task)
      for (const auto& [name, v] : rollout) names.push_back(name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// Dense scores: [task][rollout][index of the name in `names`], none where a rollout lacks it.
using DenseScores = std::vector<std::vector<std::vector<std::optional<double>>>>;
DenseScores dense_scores(const std::vector<std::vector<Scores>>& scores,
                         const std::vector<std::string>& names) {
  DenseScores dense(scores.size());
  for (std::size_t t = 0; t < scores.size(); ++t) {
    for (const auto& rollout : scores[t]) {
      std::vector<std::optional<double>> row(names.size());
      for (const auto& [name, v] : rollout) {
        auto pos = std::lower_bound(names.begin(), names.end(), name) - names.begin();
        row[static_cast<std::size_t>(pos)] = v;
      }
      dense[t].push_back(std::move(row));
    }
  }
  return dense;
}

// pass@k, pass@1[avg-of-k] and (with answers) majority@k of every score, for k = 1..max_k;
// series[name][task].
void add_pass_and_majority(json::object& metrics,
                           const std::vector<std::vector<TaskSeries>>& series,
                           const std::vector<std::string>& names, std::size_t max_k,
                           bool with_answers) {
  std::vector<double> values;
  for (std::size_t k = 1; k <= max_k; ++k) {
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
}

// per_sample[name][i]: the percentage score of rollout i over the tasks that have it.
std::vector<std::vector<double>> per_sample_scores(const DenseScores& dense, std::size_t names,
                                                   std::size_t max_k) {
  std::vector<std::vector<double>> per_sample(names);
  std::vector<double> values;
  for (std::size_t run = 0; run < max_k; ++run) {
    for (std::size_t j = 0; j < names; ++j) {
      values.clear();
      for (const auto& task : dense)
        if (run < task.size() && task[run][j]) values.push_back(*task[run][j]);
      if (!values.empty()) per_sample[j].push_back(percent_of_mean(values));
    }
  }
  return per_sample;
}

// The spread of pass@1 across runs, from the first k per-sample values, for k = 2..max_k.
void add_spread_across_runs(json::object& metrics,
                            const std::vector<std::vector<double>>& per_sample,
                            const std::vector<std::string>& names, std::size_t max_k) {
  for (std::size_t k = 2; k <= max_k; ++k) {
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
}

}  // namespace

PassMajorityResult compute_pass_majority_metrics(const TaskRollouts& tasks, const ScoreFn& score_fn,
                                                 std::optional<std::string_view> answer_key) {
  PassMajorityResult result;
  if (tasks.empty()) return result;
  const bool with_answers = answer_key.has_value();
  for (const auto& task : tasks) result.max_k = std::max(result.max_k, task.size());
  const RolloutScores scored = score_rollouts(tasks, score_fn, answer_key);
  result.score_names = score_names(scored.scores);
  const std::vector<std::string>& names = result.score_names;
  const DenseScores dense = dense_scores(scored.scores, names);

  std::vector<std::vector<TaskSeries>> series(names.size());  // [name][task]
  for (std::size_t j = 0; j < names.size(); ++j)
    for (std::size_t t = 0; t < tasks.size(); ++t)
      series[j].push_back(task_series(dense[t], scored.answers[t], j, result.max_k, with_answers));

  json::object& metrics = result.metrics;
  add_pass_and_majority(metrics, series, names, result.max_k, with_answers);
  const auto per_sample = per_sample_scores(dense, names.size(), result.max_k);
  json::object per_sample_json;
  for (std::size_t j = 0; j < names.size(); ++j) {
    if (per_sample[j].empty()) continue;
    json::array a;
    for (double v : per_sample[j]) a.push_back(v);
    per_sample_json[names[j]] = std::move(a);
  }
  metrics["per_sample_aggregate"] = std::move(per_sample_json);
  add_spread_across_runs(metrics, per_sample, names, result.max_k);
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
    // A copy: clang 14 cannot capture a structured binding (the fuzz build).
    if (std::any_of(std::begin(kStatSuffixes), std::end(kStatSuffixes),
                    [name = name](std::string_view s) { return name.ends_with(s); }))
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
