#include "rollouts/plan.h"
#include "core/console.h"

#include "core/config.h"
#include "core/json_text.h"
#include "rollouts/resume.h"
#include "rollouts/rows.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace gym::rollouts {
namespace json = boost::json;

namespace {

// On resume the materialized file wins over the input (7.7), so its rows are checked like the
// input rows (7.2): an agent this deployment does not serve is a config error before dispatch.
void check_resumed_agents(const std::filesystem::path& materialized,
                          const std::vector<json::object>& rows,
                          const std::vector<std::string>& agents) {
  std::set<std::string> unknown;
  for (const auto& row : rows)
    if (auto agent = agent_of(row); std::find(agents.begin(), agents.end(), agent) == agents.end())
      unknown.insert(agent);
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

}  // namespace

Plan plan_rows(const CollectionOptions& options, const OutputPaths& paths,
               const std::filesystem::path& input, const std::vector<std::string>& agents) {
  std::vector<JsonlLine> lines;
  try {
    lines = read_jsonl(input, options.limit, options.max_row_bytes);
  } catch (const std::runtime_error& e) {
    throw core::ConfigError(std::string("input: ") + e.what());
  }
  if (lines.empty())
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
  check_rows(input, lines, options, agents);

  Plan plan;
  if (options.resume) {
    if (std::filesystem::exists(paths.materialized) && std::filesystem::exists(paths.rollouts)) {
      // The expansion is compared with the materialized file row by row, never held whole.
      auto expanded = [&](const std::function<void(json::object &&)>& each) {
        for_each_expanded_row(input, lines, options, each);
      };
      auto resumed = plan_resume(paths, expanded, max_rollout_attempts());
      check_resumed_agents(paths.materialized, resumed.to_run, agents);
      plan.rows = std::move(resumed.to_run);
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
  for_each_expanded_row(input, lines, options,
                        [&](json::object&& row) { plan.rows.push_back(std::move(row)); });
  return plan;
}

void prepare_output_files(const Plan& plan, const CollectionOptions& options,
                          const OutputPaths& paths) {
  if (!plan.fresh) {  // a resumed run appends
    if (!plan.added.empty()) write_jsonl(paths.materialized, plan.added, /*append=*/true);
    return;
  }
  if (!options.resume)
    core::console::note("Clearing output fpath since `resume_from_cache=False`!\n");
  write_jsonl(paths.materialized, plan.rows);
  std::filesystem::remove(paths.rollouts);
  std::filesystem::remove(paths.failures);  // R6: a fresh run starts an empty sidecar
  // An earlier run's metrics would describe rollouts that are gone.
  std::filesystem::remove(paths.aggregate_metrics);
}

}  // namespace gym::rollouts
