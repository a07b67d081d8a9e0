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

}  // namespace

ResumePlan plan_resume(const OutputPaths& paths, const std::vector<json::object>& expected,
                       int max_attempts) {
  ResumePlan plan;
  drop_partial_last_line(paths.rollouts);
  drop_partial_last_line(paths.failures);
  std::vector<json::object> materialized;
  for (auto& line : read_jsonl(paths.materialized)) materialized.push_back(std::move(line.row));
  plan.materialized = materialized.size();

  if (materialized != expected)
    std::printf(
        "WARNING: the input expands differently from %s (%zu rows vs %zu); resuming the "
        "materialized rows\n",
        paths.materialized.c_str(), materialized.size(), expected.size());

  std::set<RolloutKey> done;
  for (auto& line : read_jsonl(paths.rollouts)) {
    done.insert(key_of(line.row));
    plan.done.push_back(strip_for_aggregation(line.row));
  }
  std::map<RolloutKey, int> attempts;
  std::set<RolloutKey> terminal;
  if (std::filesystem::exists(paths.failures)) {
    for (auto& line : read_jsonl(paths.failures)) {
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
