#include "rollouts/plan.h"
#include "core/console.h"

#include "core/config.h"
#include "core/json_text.h"
#include "rollouts/resume.h"
#include "rollouts/rows.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <stdexcept>

namespace gym::rollouts {
namespace json = boost::json;

namespace {

// On resume the materialized file wins over the input, so its rows are checked like the
// input rows: an agent this deployment does not serve is a config error before dispatch.
void check_resumed_agents(const std::filesystem::path& materialized,
                          const std::map<std::string, std::size_t>& per_agent,
                          const std::vector<std::string>& agents) {
  std::set<std::string> unknown;
  for (const auto& [agent, n] : per_agent)
    if (std::find(agents.begin(), agents.end(), agent) == agents.end()) unknown.insert(agent);
  if (unknown.empty()) return;
  std::string names, configured;
  for (const auto& n : unknown) names += (names.empty() ? "'" : ", '") + n + "'";
  for (const auto& n : agents) configured += (configured.empty() ? "" : ", ") + n;
  throw core::ConfigError(materialized.string() + ": the rows to resume name agent(s) " + names +
                          " that are not responses_api_agents instances of this config; nothing "
                          "was dispatched. Configured agents: " +
                          (configured.empty() ? "(none)" : configured) +
                          ". Resume against the deployment that has them, or run without --resume");
}

// Writes rows to a JSONL file (appending or replacing it) and tells where each line starts.
class JsonlWriter {
 public:
  JsonlWriter(const std::filesystem::path& path, bool append)
      : path_(path), out_(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc)) {
    if (!out_) throw std::runtime_error("cannot write " + path.string());
    std::error_code ec;
    if (append) offset_ = std::filesystem::file_size(path, ec);
  }

  // The offset of the line written.
  std::uint64_t write(const json::object& row) {
    text_.clear();
    core::render_json(row, text_);
    text_.push_back('\n');
    if (!out_.write(text_.data(), static_cast<std::streamsize>(text_.size())))
      throw std::runtime_error("cannot write " + path_.string());
    const std::uint64_t at = offset_;
    offset_ += text_.size();
    return at;
  }

  void close() {
    if (!out_.flush()) throw std::runtime_error("cannot write " + path_.string());
    out_.close();
  }

 private:
  std::filesystem::path path_;
  std::ofstream out_;
  std::uint64_t offset_ = 0;
  std::string text_;
};

[[noreturn]] void input_changed(const std::filesystem::path& input) {
  throw std::runtime_error("the input " + input.string() +
                           " changed while the run started (it expands to other rollouts than "
                           "it did when it was checked); run the command again");
}

}  // namespace

std::size_t Plan::to_dispatch() const {
  std::size_t n = 0;
  for (const auto& [agent, count] : per_agent) n += count;
  return n;
}

Plan plan_rows(const CollectionOptions& options, const OutputPaths& paths,
               const std::filesystem::path& input, const std::vector<std::string>& agents) {
  const std::size_t input_rows = check_rows(input, options, agents);
  if (input_rows == 0)
    throw core::ConfigError("input: " + input.string() +
                            " has no rows (it is empty or holds only blank lines); nothing was "
                            "started and no output file was touched. Point --input "
                            "(input_jsonl_fpath) at a JSONL file with one row per line");
  if (options.limit)
    core::console::note("Limiting the number of rows to %lld\n",
                        static_cast<long long>(*options.limit));
  if (options.agent_name)
    core::console::note("Using `%s` for rows that do not already have an agent ref\n",
                        options.agent_name->c_str());
  if (!options.create_params_overrides.empty())
    core::console::note("Overriding responses_create_params fields with %s\n",
                        core::render_json(options.create_params_overrides).c_str());

  Plan plan;
  plan.input = input;
  // The expansion is computed again wherever it is needed (compared with the materialized file,
  // written to it), never held whole.
  plan.expansion = [input, options](const std::function<void(json::object &&)>& each) {
    for_each_expanded_row(input, options, each);
  };
  if (options.resume) {
    if (std::filesystem::exists(paths.materialized) && std::filesystem::exists(paths.rollouts)) {
      auto resumed = plan_resume(paths, plan.expansion, max_rollout_attempts());
      check_resumed_agents(paths.materialized, resumed.per_agent, agents);
      plan.rollouts = std::move(resumed.to_run);
      plan.per_agent = std::move(resumed.per_agent);
      plan.done = resumed.done;
      plan.added = std::move(resumed.added);
      plan.without_result = resumed.terminal + resumed.maxed_out;
      return plan;
    }
    for (const auto* p : {&paths.rollouts, &paths.materialized})
      if (!std::filesystem::exists(*p))
        core::console::note("Skipping resume_from_cache because %s doesn't exist!\n", p->c_str());
  }
  plan.fresh = true;
  // Expanded once here too: what it refuses (a seed that cannot be added) is refused before any
  // server starts, and the counts are known to the progress bar.
  plan.expansion([&](json::object&& row) { ++plan.per_agent[agent_of(row)]; });
  return plan;
}

void prepare_output_files(Plan& plan, const CollectionOptions& options, const OutputPaths& paths) {
  if (!plan.fresh) {  // a resumed run appends
    if (plan.added.empty()) return;
    std::map<RolloutKey, const AddedRollout*> added;
    for (const auto& a : plan.added) added.emplace(a.key, &a);
    JsonlWriter out(paths.materialized, /*append=*/true);
    std::size_t appended = 0;
    plan.expansion([&](json::object&& row) {
      auto it = added.find(key_of(row));
      if (it == added.end()) return;
      const std::uint64_t offset = out.write(row);
      ++appended;
      if (it->second->runs) plan.rollouts.push_back({offset, it->second->attempts});
    });
    out.close();
    if (appended != plan.added.size()) input_changed(plan.input);
    return;
  }
  if (!options.resume)
    core::console::note("Clearing output fpath since `resume_from_cache=False`!\n");
  // Written beside the file and renamed over it once complete: an input that changed meanwhile
  // leaves every earlier file as it was.
  auto partial = paths.materialized;
  partial += ".partial";
  JsonlWriter out(partial, /*append=*/false);
  plan.rollouts.clear();
  plan.rollouts.reserve(plan.to_dispatch());
  try {
    plan.expansion([&](json::object&& row) { plan.rollouts.push_back({out.write(row), 0}); });
    out.close();
    if (plan.rollouts.size() != plan.to_dispatch()) input_changed(plan.input);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(partial, ec);
    throw;
  }
  std::filesystem::rename(partial, paths.materialized);
  std::filesystem::remove(paths.rollouts);
  std::filesystem::remove(paths.failures);  // a fresh run starts an empty sidecar
  // An earlier run's metrics would describe rollouts that are gone.
  std::filesystem::remove(paths.aggregate_metrics);
}

PlannedRows::PlannedRows(const std::filesystem::path& materialized,
                         std::vector<PlannedRollout> rollouts)
    : path_(materialized), rollouts_(std::move(rollouts)), in_(materialized, std::ios::binary) {
  if (!in_) throw std::runtime_error("cannot read " + path_.string());
}

std::optional<json::object> PlannedRows::next() {
  if (next_ == rollouts_.size()) return std::nullopt;
  const PlannedRollout& planned = rollouts_[next_++];
  if (planned.offset != position_) {
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(planned.offset));
  }
  std::getline(in_, line_);
  position_ = planned.offset + line_.size() + 1;  // before a repair changes the line's size
  if (!core::is_valid_utf8(line_)) line_ = core::utf8_replace_invalid(line_);
  boost::system::error_code ec;
  auto value = core::parse_json(line_, ec);
  if (!in_ || ec || !value.is_object())
    throw std::runtime_error(path_.string() + " changed while the run read it (the line at byte " +
                             std::to_string(planned.offset) +
                             " is not the row it planned); run the command again with --resume");
  json::object row = std::move(value.get_object());
  if (planned.attempts > 0) row["_ng_attempt_index"] = planned.attempts;
  return row;
}

}  // namespace gym::rollouts
