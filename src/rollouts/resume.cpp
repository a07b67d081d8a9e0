#include "rollouts/resume.h"

#include "rollouts/collector.h"
#include "rollouts/rows.h"

#include <boost/json.hpp>

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

  if (materialized != expected)
    std::printf(
        "WARNING: the input expands differently from %s (%zu rows vs %zu); resuming the "
        "materialized rows\n",
        paths.materialized.c_str(), materialized.size(), expected.size());

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
      ++attempts[key];
      ++plan.failure_attempts;
      const auto* t = line.row.if_contains("_ng_failure_terminal");
      if (t && t->is_bool() && t->get_bool()) terminal.insert(key);
    }
  }
  plan.failed_keys = attempts.size();
  plan.terminal = terminal.size();
  std::set<RolloutKey> maxed;
  for (const auto& [key, n] : attempts)
    if (n >= max_attempts) maxed.insert(key);
  plan.maxed_out = maxed.size();

  for (auto& row : materialized) {
    auto key = key_of(row);
    if (done.count(key) || terminal.count(key) || maxed.count(key)) continue;
    if (auto it = attempts.find(key); it != attempts.end() && it->second > 0)
      row["_ng_attempt_index"] = it->second;
    plan.to_run.push_back(std::move(row));
  }
  std::printf(
      "Resumed from cache. Found:\n"
      "- %zu original input rows\n"
      "- %zu rows already done (in main jsonl)\n"
      "- %zu prior failure attempts (%zu unique tasks) in sidecar\n"
      "- %zu sidecar-terminal -> not retried\n"
      "- %zu hit max_attempts=%d -> not retried\n"
      "- %zu rows that still need to be run\n",
      plan.materialized, plan.done.size(), plan.failure_attempts, plan.failed_keys, plan.terminal,
      plan.maxed_out, max_attempts, plan.to_run.size());
  return plan;
}

}  // namespace gym::rollouts
