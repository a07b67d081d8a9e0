#include "rollouts/datasets.h"
#include "core/console.h"

#include "core/config.h"
#include "core/json_text.h"
#include "rollouts/rows.h"

#include <boost/json.hpp>

#include <cstdio>
#include <fstream>

namespace gym::rollouts {
namespace json = boost::json;

std::filesystem::path collate_datasets(const json::object& cfg, const std::string& split,
                                       const std::filesystem::path& stem) {
  const auto roots = core::default_sources().search_roots;
  std::vector<json::object> rows;
  std::size_t datasets = 0;
  for (const auto& inst : core::find_server_instances(cfg)) {
    if (inst.server_type != "responses_api_agents") continue;
    const auto* list = inst.config.if_contains("datasets");
    if (!list || !list->is_array()) continue;
    for (const auto& d : list->get_array()) {
      if (!d.is_object()) continue;
      const auto& ds = d.get_object();
      if (core::get_string(ds, "type", "") != split) continue;
      const std::string name = core::get_string(ds, "name", "?");
      const std::string where = inst.name + ".datasets[" + name + "]";
      if (ds.contains("num_repeats"))
        std::printf(
            "WARNING: %s sets num_repeats, which collection does not apply; use --num-repeats\n",
            where.c_str());
      const std::string file = core::get_string(ds, "jsonl_fpath", "");
      if (file.empty()) throw core::ConfigError(where + " has no jsonl_fpath");
      // Remote sources are never downloaded: the file must already be here.
      const std::string path = core::resolve_search_path(file, roots, "dataset", where);
      ++datasets;
      for (auto& line : read_jsonl(path)) {
        if (!line.row.contains("agent_ref"))
          line.row["agent_ref"] =
              json::object{{"type", "responses_api_agents"}, {"name", inst.name}};
        rows.push_back(std::move(line.row));
      }
    }
  }
  if (datasets == 0)
    throw core::ConfigError("no agent has a dataset of type '" + split +
                            "': pass --input FILE.jsonl or choose another --split");
  auto out = stem / "preprocessed_datasets" / (split + ".jsonl");
  std::filesystem::create_directories(out.parent_path());
  write_jsonl(out, rows);
  core::console::note("Collated %zu rows from %zu dataset(s) into %s\n", rows.size(), datasets,
                      out.c_str());
  return out;
}

}  // namespace gym::rollouts
