// `gym list`: what can be run without writing a config (issue 13.12): the environments and
// model types the selectors accept, the agents their presets define, the built-in
// implementations.
#include "cli/builtins.h"
#include "cli/commands.h"
#include "core/json_text.h"
#include "core/yaml_json.h"
#include "orchestrator/presets.h"

#include <boost/json.hpp>

#include <cstdio>

namespace gym::cli {
namespace json = boost::json;

namespace {

std::string selector_of(const orchestrator::Preset& p) {
  return p.name == std::string(p.flavor) ? std::string(p.name)
                                         : std::string(p.name) + "/" + p.flavor;
}

// The agent instances a preset defines (none when it cannot be read).
std::vector<std::string> agents_of(const orchestrator::Preset& p) {
  std::vector<std::string> names;
  try {
    auto tree = core::parse_yaml(p.yaml, selector_of(p));
    if (!tree.is_object()) return names;
    for (const auto& inst : core::find_server_instances(tree.get_object()))
      if (inst.server_type == "responses_api_agents") names.push_back(inst.name);
  } catch (const std::exception&) {
  }
  return names;
}

}  // namespace

int run_list(bool as_json) {
  json::array environments, agents, models;
  for (const auto& p : orchestrator::bundled_presets()) {
    if (p.server_type == std::string("resources_servers")) {
      environments.emplace_back(selector_of(p));
      for (const auto& agent : agents_of(p))
        agents.emplace_back(json::object{{"name", agent}, {"environment", selector_of(p)}});
    } else if (p.server_type == std::string("responses_api_models")) {
      models.emplace_back(selector_of(p));
    }
  }
  json::object implementations;
  for (const auto& [type, names] : builtin_registry().catalog()) {
    json::array list;
    for (const auto& n : names) list.emplace_back(n);
    implementations[type] = std::move(list);
  }
  if (as_json) {
    json::object out{{"environments", environments},
                     {"agents", agents},
                     {"model_types", models},
                     {"implementations", implementations}};
    std::puts(core::render_json(out).c_str());
    return 0;
  }
  std::puts("Environments (--resources-server NAME):");
  for (const auto& e : environments) std::printf("  %s\n", e.as_string().c_str());
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
      "Example: gym eval run --resources-server mcqa --model-type replay_model --agent "
      "mcqa_simple_agent --input rows.jsonl --output out/rollouts.jsonl");
  return 0;
}

}  // namespace gym::cli
