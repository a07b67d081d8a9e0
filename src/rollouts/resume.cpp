#include "rollouts/resume.h"
#include "core/console.h"

#include "rollouts/collector.h"
#include "rollouts/failure_cause.h"
#include "rollouts/rows.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace gym::rollouts {
namespace json = boost::json;

namespace {

// A collector killed mid-write leaves a line without its newline: cut it off so appending
// continues on a clean line.
void drop_partial_last_line(const std::filesystem::path& path) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec || size == 0) return;
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.ends_with('\n')) return;
  auto keep = text.rfind('\n');
  keep = keep == std::string::npos ? 0 : keep + 1;
  std::printf(
      "WARNING: %s ends with an incomplete line (%zu bytes); removing it, its rollout runs again\n",
      path.c_str(), text.size() - keep);
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

// The rows of an output file, each with its (task, rollout) key; a line --resume cannot use is
// an error saying how to repair the file.
std::vector<std::pair<JsonlLine, RolloutKey>> read_keyed(const std::filesystem::path& path,
                                                         bool is_materialized) {
  std::vector<JsonlLine> lines;
  try {
    lines = read_jsonl(path);
  } catch (const JsonlLineError& e) {
    refuse_line(path, e.line, e.what(), is_materialized);
  }
  std::vector<std::pair<JsonlLine, RolloutKey>> out;
  for (auto& line : lines) {
    RolloutKey key;
    try {
      key = key_of(line.row);
    } catch (const std::runtime_error& e) {
      refuse_line(path, line.number,
                  path.string() + " line " + std::to_string(line.number) + ": " + e.what(),
                  is_materialized);
    }
    out.emplace_back(std::move(line), key);
  }
  return out;
}

// A failure row the model endpoint caused (collector.cpp marks them): not the rollout's attempt.
bool is_outage(const json::object& row) {
  const auto* fault = row.if_contains("_ng_failure_endpoint_fault");
  if (!fault || !fault->is_string()) return false;
  auto named = endpoint_fault_named(fault->get_string());
  return named && is_endpoint_outage(*named);
}

// The rollouts `expected` adds to `materialized` when every materialized rollout is still in it
// unchanged (the same input with more repeats); else a warning and none (the file wins).
std::vector<json::object> added_rollouts(const OutputPaths& paths,
                                         const std::vector<json::object>& materialized,
                                         const std::vector<json::object>& expected) {
  std::map<RolloutKey, const json::object*> by_key;
  for (const auto& row : expected) by_key.emplace(key_of(row), &row);
  std::size_t kept = 0;
  std::set<std::int64_t> tasks;
  for (const auto& row : materialized) {
    auto it = by_key.find(key_of(row));
    tasks.insert(key_of(row).first);
    if (it != by_key.end() && *it->second == row) {
      ++kept;
      by_key.erase(it);
    }
  }
  // Only more rollouts of the same tasks: a changed or longer input is a new run.
  const bool only_repeats = std::all_of(
      by_key.begin(), by_key.end(), [&](const auto& kv) { return tasks.count(kv.first.first); });
  if (kept == materialized.size() && !by_key.empty() && only_repeats) {
    std::vector<json::object> added;
    for (const auto& row : expected)
      if (by_key.count(key_of(row))) added.push_back(row);
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

}  // namespace

ResumePlan plan_resume(const OutputPaths& paths, const std::vector<json::object>& expected,
                       int max_attempts) {
  ResumePlan plan;
  drop_partial_last_line(paths.rollouts);
  drop_partial_last_line(paths.failures);
  std::vector<json::object> materialized;
  for (auto& [line, key] : read_keyed(paths.materialized, true))
    materialized.push_back(std::move(line.row));
  plan.materialized = materialized.size();

  if (materialized != expected) plan.added = added_rollouts(paths, materialized, expected);

  std::set<RolloutKey> done;
  for (auto& [line, key] : read_keyed(paths.rollouts, false)) {
    done.insert(key);
    plan.done.push_back(strip_for_aggregation(line.row));
  }
  std::map<RolloutKey, int> attempts;
  std::set<RolloutKey> terminal;
  if (std::filesystem::exists(paths.failures)) {
    std::vector<JsonlLine> failure_lines;
    try {
      failure_lines = read_jsonl(paths.failures);
    } catch (const JsonlLineError& e) {
      refuse_line(paths.failures, e.line, e.what(), false);
    }
    for (auto& line : failure_lines) {
      if (!line.row.contains("_ng_task_index") || !line.row.contains("_ng_rollout_index")) continue;
      auto key = key_of(line.row);
      if (is_outage(line.row)) {
        ++plan.endpoint_outages;
        attempts.try_emplace(key, 0);
        continue;
      }
      ++attempts[key];
      ++plan.failure_attempts;
      const auto* t = line.row.if_contains("_ng_failure_terminal");
      if (t && t->is_bool() && t->get_bool()) terminal.insert(key);
    }
  }
  for (const auto& [key, n] : attempts) plan.failed_keys += n > 0;
  plan.terminal = terminal.size();
  std::set<RolloutKey> maxed;
  for (const auto& [key, n] : attempts)
    if (n >= max_attempts) maxed.insert(key);
  plan.maxed_out = maxed.size();

  for (const auto& row : plan.added) materialized.push_back(row);
  for (auto& row : materialized) {
    auto key = key_of(row);
    if (done.count(key) || terminal.count(key) || maxed.count(key)) continue;
    if (auto it = attempts.find(key); it != attempts.end() && it->second > 0)
      row["_ng_attempt_index"] = it->second;
    plan.to_run.push_back(std::move(row));
  }
  core::console::note(
      "Resumed from cache. Found:\n"
      "- %zu rollouts in the materialized inputs\n"
      "- %zu rollouts already done (in main jsonl)\n"
      "- %zu prior failed attempts (of %zu rollouts) in sidecar\n",
      plan.materialized, plan.done.size(), plan.failure_attempts, plan.failed_keys);
  if (plan.endpoint_outages > 0)
    core::console::note("- %zu failures caused by the model endpoint (not counted as attempts)\n",
                        plan.endpoint_outages);
  core::console::note(
      "- %zu sidecar-terminal -> not retried\n"
      "- %zu hit max_attempts=%d -> not retried\n",
      plan.terminal, plan.maxed_out, max_attempts);
  if (!plan.added.empty())
    core::console::note("- %zu rollouts added: the input now expands to more\n", plan.added.size());
  core::console::note("- %zu rollouts that still need to be run\n", plan.to_run.size());
  return plan;
}

}  // namespace gym::rollouts
