#include "rollouts/resume.h"
#include "core/console.h"
#include "core/json_text.h"

#include "rollouts/collector.h"
#include "rollouts/failure_cause.h"
#include "rollouts/rows.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace gym::rollouts {
namespace json = boost::json;

namespace {

// The output files are gym's own: a line an older gym wrote with bytes that are not UTF-8 (an
// endpoint's Latin-1 error page) is read with U+FFFD in their place, never refused.
const JsonlReading kOwnFile = JsonlReading::own_file();

// A collector killed mid-write leaves a line without its newline: cut it off so appending
// continues on a clean line. Only the tail is read, back from the end to the last newline.
void drop_partial_last_line(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size == 0) return;
  std::ifstream in(path, std::ios::binary);
  std::vector<char> block(1 << 16);
  std::uintmax_t end = size, keep = 0;
  bool complete = false;
  while (end > 0) {
    const std::uintmax_t n = std::min<std::uintmax_t>(block.size(), end);
    in.seekg(static_cast<std::streamoff>(end - n));
    if (!in.read(block.data(), static_cast<std::streamsize>(n)))
      throw std::runtime_error("cannot read " + path.string());
    const auto* found = static_cast<const char*>(memrchr(block.data(), '\n', n));
    if (found) {
      keep = end - n + static_cast<std::uintmax_t>(found - block.data()) + 1;
      complete = keep == size;
      break;
    }
    end -= n;
  }
  if (complete) return;
  std::printf(
      "WARNING: %s ends with an incomplete line (%ju bytes); removing it, its rollout runs again\n",
      path.c_str(), size - keep);
  std::filesystem::resize_file(path, keep);
}

// What to do about a line of an output file that --resume cannot read.
[[noreturn]] void refuse_line(const std::filesystem::path& path, std::size_t line,
                              const std::string& problem, bool is_materialized) {
  std::string fix =
      is_materialized
          ? "the materialized inputs are the rows --resume runs: fix that line, or run the same "
            "command without --resume to start afresh (that rewrites every output file)"
          : "fix that line, or delete it (`sed -i '" + std::to_string(line) + "d' " +
                path.string() +
                "`; its rollout then runs again), or run without --resume to start afresh";
  throw std::runtime_error("cannot resume: " + problem + "; " + fix);
}

// Calls `each` with every row of an output file and its (task, rollout) key, one line at a
// time; a line --resume cannot use is an error saying how to repair the file.
void for_each_keyed(const std::filesystem::path& path, bool is_materialized,
                    const std::function<void(JsonlLine&, const RolloutKey&)>& each) {
  try {
    for_each_jsonl(
        path,
        [&](JsonlLine& line) {
          RolloutKey key;
          try {
            key = key_of(line.row);
          } catch (const std::runtime_error& e) {
            refuse_line(path, line.number,
                        path.string() + " line " + std::to_string(line.number) + ": " + e.what(),
                        is_materialized);
          }
          each(line, key);
        },
        kOwnFile);
  } catch (const JsonlLineError& e) {
    refuse_line(path, e.line, e.what(), is_materialized);
  }
}

// A failure row the model endpoint caused (collector.cpp marks them): not the rollout's attempt.
bool is_outage(const json::object& row) {
  const auto* fault = row.if_contains("_ng_failure_endpoint_fault");
  if (!fault || !fault->is_string()) return false;
  auto named = endpoint_fault_named(fault->get_string());
  return named && is_endpoint_outage(*named);
}

// A row as the comparison of the materialized file with the input's expansion needs it: its key
// and a digest of its content (equal rows, whatever their key order, have equal digests).
struct RowDigest {
  RolloutKey key;
  std::size_t hash = 0;
  std::uint64_t offset = 0;  // of its line in the materialized file
  std::uint32_t agent = 0;   // index in AgentNames
};

// The agents rows name, each stored once (a resume may plan millions of rows).
class AgentNames {
 public:
  std::uint32_t index_of(const json::object& row) {
    auto [it, added] = index_.try_emplace(agent_of(row), static_cast<std::uint32_t>(names_.size()));
    if (added) names_.push_back(it->first);
    return it->second;
  }
  const std::string& name(std::uint32_t index) const { return names_[index]; }

 private:
  std::map<std::string, std::uint32_t> index_;
  std::vector<std::string> names_;
};

RowDigest digest_of(const json::object& row) {
  return {key_of(row), std::hash<json::object>{}(row)};
}

// The keys `expected` adds to `materialized` when every materialized rollout is still in it
// unchanged (the same input with more repeats); else a warning and none (the file wins).
std::set<RolloutKey> added_keys(const OutputPaths& paths,
                                const std::vector<RowDigest>& materialized,
                                const std::vector<RowDigest>& expected) {
  std::map<RolloutKey, std::size_t> by_key;  // the first row of each key
  for (const auto& row : expected) by_key.emplace(row.key, row.hash);
  std::size_t kept = 0;
  std::set<std::int64_t> tasks;
  for (const auto& row : materialized) {
    auto it = by_key.find(row.key);
    tasks.insert(row.key.first);
    if (it != by_key.end() && it->second == row.hash) {
      ++kept;
      by_key.erase(it);
    }
  }
  // Only more rollouts of the same tasks: a changed or longer input is a new run.
  const bool only_repeats = std::all_of(
      by_key.begin(), by_key.end(), [&](const auto& kv) { return tasks.count(kv.first.first); });
  if (kept == materialized.size() && !by_key.empty() && only_repeats) {
    std::set<RolloutKey> added;
    for (const auto& kv : by_key) added.insert(kv.first);
    return added;
  }
  std::printf(
      "WARNING: the input expands differently from %s (%zu rollouts vs %zu); resuming the "
      "materialized rollouts. --resume adds rollouts (a larger --num-repeats over the same "
      "input) but never drops or changes one: to run a changed input, use another --output or run "
      "without --resume (that rewrites every output file)\n",
      paths.materialized.c_str(), materialized.size(), expected.size());
  return {};
}

// The rollouts the rollouts file has a result for.
struct DoneRollouts {
  std::size_t rows = 0;          // lines of the file (a rollout may have more than one)
  std::vector<RolloutKey> keys;  // sorted, unique

  bool has(const RolloutKey& key) const {
    return std::binary_search(keys.begin(), keys.end(), key);
  }
};

DoneRollouts read_done(const std::filesystem::path& rollouts) {
  DoneRollouts done;
  for_each_keyed(rollouts, false,
                 [&](JsonlLine&, const RolloutKey& key) { done.keys.push_back(key); });
  done.rows = done.keys.size();
  std::sort(done.keys.begin(), done.keys.end());
  done.keys.erase(std::unique(done.keys.begin(), done.keys.end()), done.keys.end());
  return done;
}

// What the failures sidecar says about each rollout.
struct FailureHistory {
  std::map<RolloutKey, int> attempts;  // failures counted as attempts (0: only outages)
  std::set<RolloutKey> terminal;       // marked terminal by their agent
  std::set<RolloutKey> maxed;          // out of attempts
  std::size_t counted_attempts = 0;
  std::size_t endpoint_outages = 0;  // failures of the model endpoint: no attempt of the rollout

  std::int64_t attempts_of(const RolloutKey& key) const {
    auto it = attempts.find(key);
    return it == attempts.end() ? 0 : it->second;
  }
};

FailureHistory read_failures(const std::filesystem::path& failures, int max_attempts) {
  FailureHistory history;
  if (!std::filesystem::exists(failures)) return history;
  try {
    for_each_jsonl(
        failures,
        [&](JsonlLine& line) {
          if (!line.row.contains("_ng_task_index") || !line.row.contains("_ng_rollout_index"))
            return;
          auto key = key_of(line.row);
          if (is_outage(line.row)) {
            ++history.endpoint_outages;
            history.attempts.try_emplace(key, 0);
            return;
          }
          ++history.attempts[key];
          ++history.counted_attempts;
          const auto* t = line.row.if_contains("_ng_failure_terminal");
          if (t && t->is_bool() && t->get_bool()) history.terminal.insert(key);
        },
        kOwnFile);
  } catch (const JsonlLineError& e) {
    refuse_line(failures, e.line, e.what(), false);
  }
  for (const auto& [key, n] : history.attempts)
    if (n >= max_attempts) history.maxed.insert(key);
  return history;
}

// The summary upstream prints, with what gym-cpp adds (outages, added rollouts).
void print_summary(const ResumePlan& plan, std::size_t dispatched, int max_attempts) {
  core::console::note(
      "Resumed from cache. Found:\n"
      "- %zu rollouts in the materialized inputs\n"
      "- %zu rollouts already done (in main jsonl)\n"
      "- %zu prior failed attempts (of %zu rollouts) in sidecar\n",
      plan.materialized, plan.done, plan.failure_attempts, plan.failed_keys);
  if (plan.endpoint_outages > 0)
    core::console::note("- %zu failures caused by the model endpoint (not counted as attempts)\n",
                        plan.endpoint_outages);
  core::console::note(
      "- %zu sidecar-terminal -> not retried\n"
      "- %zu hit max_attempts=%d -> not retried\n",
      plan.terminal, plan.maxed_out, max_attempts);
  if (!plan.added.empty())
    core::console::note("- %zu rollouts added: the input now expands to more\n", plan.added.size());
  core::console::note("- %zu rollouts that still need to be run\n", dispatched);
}

}  // namespace

ResumePlan plan_resume(const OutputPaths& paths, const std::vector<json::object>& expected,
                       int max_attempts) {
  return plan_resume(
      paths,
      [&](const std::function<void(json::object &&)>& each) {
        for (const auto& row : expected) each(json::object(row));
      },
      max_attempts);
}

ResumePlan plan_resume(const OutputPaths& paths, const ExpandedRows& expected, int max_attempts) {
  ResumePlan plan;
  std::vector<RowDigest> expansion;
  expected([&](json::object&& row) { expansion.push_back(digest_of(row)); });
  drop_partial_last_line(paths.rollouts);
  drop_partial_last_line(paths.failures);
  AgentNames agents;
  std::vector<RowDigest> materialized;
  for_each_keyed(paths.materialized, true, [&](JsonlLine& line, const RolloutKey& key) {
    materialized.push_back(
        {key, std::hash<json::object>{}(line.row), line.offset, agents.index_of(line.row)});
  });
  plan.materialized = materialized.size();

  const bool same = std::equal(
      materialized.begin(), materialized.end(), expansion.begin(), expansion.end(),
      [](const RowDigest& a, const RowDigest& b) { return a.key == b.key && a.hash == b.hash; });
  std::vector<std::pair<RolloutKey, std::uint32_t>> added;  // key, agent
  if (!same) {
    const auto keys = added_keys(paths, materialized, expansion);
    if (!keys.empty())
      expected([&](json::object&& row) {
        if (auto key = key_of(row); keys.count(key)) added.emplace_back(key, agents.index_of(row));
      });
  }
  expansion = {};

  const DoneRollouts done = read_done(paths.rollouts);
  plan.done = done.rows;
  const FailureHistory failures = read_failures(paths.failures, max_attempts);
  plan.endpoint_outages = failures.endpoint_outages;
  plan.failure_attempts = failures.counted_attempts;
  for (const auto& [key, n] : failures.attempts) plan.failed_keys += n > 0;
  plan.terminal = failures.terminal.size();
  plan.maxed_out = failures.maxed.size();

  auto runs_again = [&](const RolloutKey& key) {
    return !done.has(key) && !failures.terminal.count(key) && !failures.maxed.count(key);
  };
  std::size_t dispatched = 0;
  for (const auto& m : materialized) {
    if (!runs_again(m.key)) continue;
    plan.to_run.push_back({m.offset, failures.attempts_of(m.key)});
    ++plan.per_agent[agents.name(m.agent)];
    ++dispatched;
  }
  for (const auto& [key, agent] : added) {
    const bool runs = runs_again(key);
    plan.added.push_back({key, failures.attempts_of(key), runs});
    if (runs) {
      ++plan.per_agent[agents.name(agent)];
      ++dispatched;
    }
  }
  print_summary(plan, dispatched, max_attempts);
  return plan;
}

}  // namespace gym::rollouts
