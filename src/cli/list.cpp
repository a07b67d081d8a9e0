// `gym list`: what can be run without writing a config (issue 13.12): the environments and
// model types the selectors accept (a NeMo Gym checkout's or --search-dir's first), the agents
// their presets define, which environments run as external servers, the built-in implementations.
#include "cli/builtins.h"
#include "cli/commands.h"
#include "core/config.h"
#include "core/json_text.h"
#include "core/yaml_json.h"
#include "orchestrator/presets.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

namespace gym::cli {
namespace json = boost::json;

namespace {

std::string selector_of(const orchestrator::Preset& p) {
  return p.name == std::string(p.flavor) ? std::string(p.name)
                                         : std::string(p.name) + "/" + p.flavor;
}

// One selectable environment: its selector, where its config comes from, the agents it defines
// and, for one that is not built in, how it runs
// (docs/design/wire-compatibility.md#external-servers).
struct Listed {
  std::string selector;
  std::string source;    // "built-in preset" or the config file
  std::string external;  // "python3 app.py in <folder>", empty for a built-in implementation
  std::string note;      // e.g. a C++ folder (`gym env init`) this gym was not built with
  std::vector<std::string> agents;
};

Listed describe(std::string selector, std::string source, const std::string& yaml,
                const std::vector<std::string>& roots) {
  Listed l{std::move(selector), std::move(source), "", "", {}};
  try {
    auto tree = core::parse_yaml(yaml, l.source);
    if (!tree.is_object()) return l;
    const auto catalog = builtin_registry().catalog();
    for (const auto& inst : core::find_server_instances(tree.get_object())) {
      if (inst.server_type == "responses_api_agents") l.agents.push_back(inst.name);
      if (inst.server_type != "resources_servers" || core::is_builtin(inst, catalog)) continue;
      auto folder = core::find_server_folder(inst, roots);
      // A C++ environment (`gym env init --into`) is run by a gym built with it.
      const auto owner = std::filesystem::path(l.source).parent_path().parent_path();
      std::error_code ec;
      if (!folder && std::filesystem::exists(owner / "CMakeLists.txt", ec)) {
        l.note = "C++ in " + owner.string() +
                 ", not built into this gym: configure gym-cpp with -DGYM_EXTRA_ENVIRONMENTS=" +
                 owner.parent_path().string();
        continue;
      }
      l.external = folder
                       ? core::get_string(inst.config, "entrypoint", "") + " in " + folder->string()
                       : "no folder " + inst.server_type + "/" + inst.impl + "/ found";
    }
  } catch (const std::exception&) {
  }
  return l;
}

// What `--resources-server NAME[/flavor]` can load: resources_servers/<name>/configs/*.yaml in
// the search roots (a NeMo Gym checkout, --search-dir) first, then the bundled presets.
std::vector<Listed> environments(const std::vector<std::string>& search_dirs) {
  auto roots = search_dirs;  // --search-dir first, as `gym eval run` looks
  for (auto& root : core::default_sources().search_roots)
    if (std::find(roots.begin(), roots.end(), root) == roots.end()) roots.push_back(root);
  std::vector<Listed> out;
  std::set<std::string> seen;
  for (const auto& root : roots) {
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::path(root) / "resources_servers";
    std::vector<std::filesystem::path> files;
    for (const auto& env : std::filesystem::directory_iterator(dir, ec))
      for (const auto& f : std::filesystem::directory_iterator(env.path() / "configs", ec))
        if (f.path().extension() == ".yaml") files.push_back(f.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      const std::string name = f.parent_path().parent_path().filename().string();
      const std::string flavor = f.stem().string();
      const std::string selector = name == flavor ? name : name + "/" + flavor;
      if (!seen.insert(selector).second) continue;
      std::ifstream in(f);
      std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      out.push_back(describe(selector, f.string(), yaml, roots));
    }
  }
  for (const auto& p : orchestrator::bundled_presets())
    if (p.server_type == std::string("resources_servers") && seen.insert(selector_of(p)).second)
      out.push_back(describe(selector_of(p), "built-in preset", p.yaml, roots));
  return out;
}

}  // namespace

int run_list(bool as_json, const std::vector<std::string>& search_dirs) {
  json::array environment_list, sources, agents, models;
  const auto listed = environments(search_dirs);
  for (const auto& e : listed) {
    environment_list.emplace_back(e.selector);
    sources.push_back(json::object{
        {"name", e.selector},
        {"config", e.source},
        {"external", e.external.empty() ? json::value(nullptr) : json::value(e.external)},
        {"note", e.note.empty() ? json::value(nullptr) : json::value(e.note)}});
    for (const auto& agent : e.agents)
      agents.emplace_back(json::object{{"name", agent}, {"environment", e.selector}});
  }
  for (const auto& p : orchestrator::bundled_presets())
    if (p.server_type == std::string("responses_api_models")) models.emplace_back(selector_of(p));
  json::object implementations;
  for (const auto& [type, names] : builtin_registry().catalog()) {
    json::array list;
    for (const auto& n : names) list.emplace_back(n);
    implementations[type] = std::move(list);
  }
  if (as_json) {
    json::object out{{"environments", environment_list},
                     {"environment_sources", sources},
                     {"agents", agents},
                     {"model_types", models},
                     {"implementations", implementations}};
    std::puts(core::render_json(out).c_str());
    return 0;
  }
  std::puts("Environments (--resources-server NAME):");
  for (const auto& e : listed) {
    std::string notes;
    if (e.source != "built-in preset") notes += "from " + e.source;
    if (!e.external.empty()) notes += (notes.empty() ? "" : "; ") + ("external: " + e.external);
    if (!e.note.empty()) notes += (notes.empty() ? "" : "; ") + e.note;
    if (notes.empty())
      std::printf("  %s\n", e.selector.c_str());
    else
      std::printf("  %-42s (%s)\n", e.selector.c_str(), notes.c_str());
  }
  std::puts("Agents (--agent NAME; each comes with its environment):");
  for (const auto& a : agents)
    std::printf("  %-42s %s\n", a.at("name").as_string().c_str(),
                a.at("environment").as_string().c_str());
  std::puts("Model types (--model-type NAME):");
  for (const auto& m : models) std::printf("  %s\n", m.as_string().c_str());
  std::puts("Implementations for your own configs (<instance>: {<server type>: {<impl>: ...}}):");
  for (const auto& [type, names] : implementations) {
    std::string line;
    for (const auto& n : names.as_array())
      line += (line.empty() ? "" : ", ") + std::string(n.as_string());
    std::printf("  %s: %s\n", std::string(type).c_str(), line.c_str());
  }
  std::puts(
      "Example: gym eval run --resources-server mcqa --model-type replay_model --split example "
      "--output out/rollouts.jsonl");
  return 0;
}

}  // namespace gym::cli
