// `gym serve` (a spawned server) and `gym config show`.
#include "cli/builtins.h"
#include "cli/commands.h"
#include "core/secrets.h"
#include "core/yaml_json.h"
#include "exporters/metrics_pipeline.h"
#include "orchestrator/presets.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gym::cli {

core::ConfigSources to_sources(const ConfigFlags& flags) {
  if (!flags.search_dirs.empty()) {
    std::string roots;
    for (const auto& d : flags.search_dirs) roots += (roots.empty() ? "" : ":") + d;
    if (const char* old = std::getenv("NEMO_GYM_EXTRA_ROOTS"); old && *old)
      roots += std::string(":") + old;
    ::setenv("NEMO_GYM_EXTRA_ROOTS", roots.c_str(), 1);  // children resolve paths alike
  }
  auto s = core::default_sources();
  std::size_t next_config = 0, next_resources = 0, next_model = 0;
  for (const auto& name : flags.parse_order) {
    if (name == "--config" && next_config < flags.config_paths.size()) {
      s.config_paths.push_back(flags.config_paths[next_config++]);
    } else if (name == "--resources-server" && next_resources < flags.resources_servers.size()) {
      s.config_paths.push_back(orchestrator::selector_config_path(
          "resources_servers", flags.resources_servers[next_resources++], s.search_roots));
    } else if (name == "--model-type" && next_model < flags.model_types.size()) {
      s.config_paths.push_back(orchestrator::selector_config_path(
          "responses_api_models", flags.model_types[next_model++], s.search_roots));
    }
  }
  // Sources given without a recorded flag order (programmatic callers) come last.
  for (; next_config < flags.config_paths.size(); ++next_config)
    s.config_paths.push_back(flags.config_paths[next_config]);
  for (; next_resources < flags.resources_servers.size(); ++next_resources)
    s.config_paths.push_back(orchestrator::selector_config_path(
        "resources_servers", flags.resources_servers[next_resources], s.search_roots));
  for (; next_model < flags.model_types.size(); ++next_model)
    s.config_paths.push_back(orchestrator::selector_config_path(
        "responses_api_models", flags.model_types[next_model], s.search_roots));
  auto add = [&](const std::string& key, const std::string& value) {
    if (!value.empty()) s.overrides.push_back("++" + key + "=" + value);
  };
  s.load_env_yaml = !flags.no_env_file;
  s.env_file = flags.env_file;
  s.initial_config = flags.initial_config;
  s.bundled_config = orchestrator::bundled_preset_text;
  add("policy_model_name", flags.model);
  add("policy_base_url", flags.model_url);
  add("policy_api_key", flags.model_api_key);
  add("model_call_timeout_seconds", flags.model_timeout);
  if (flags.verbose) s.overrides.push_back("++verbose=true");
  s.overrides.insert(s.overrides.end(), flags.overrides.begin(), flags.overrides.end());
  return s;
}

void check_model_flags(const ConfigFlags& flags, bool starts_servers, std::string_view verb) {
  std::vector<std::string> given;
  if (!flags.model.empty()) given.push_back("--model");
  if (!flags.model_url.empty()) given.push_back("--model-url");
  if (!flags.model_api_key.empty()) given.push_back("--model-api-key");
  if (!flags.model_timeout.empty()) given.push_back("--model-timeout");
  if (given.empty()) return;
  std::string names;
  for (const auto& g : given) names += (names.empty() ? "" : ", ") + g;
  if (!starts_servers)
    throw core::ConfigError("config error: " + names + " does not apply to " + std::string(verb) +
                            ": it starts no model server (the running deployment's model servers "
                            "already have their endpoint); drop the flag");
  static constexpr std::string_view kLive[] = {"vllm_model", "openai_model", "azure_openai_model"};
  std::string configured;
  for (const auto& inst : core::find_server_instances(core::load_config(to_sources(flags)))) {
    if (inst.server_type != "responses_api_models") continue;
    for (auto live : kLive)
      if (inst.impl == live) return;
    configured += (configured.empty() ? "" : ", ") + inst.name + " (" + inst.impl + ")";
  }
  throw core::ConfigError(
      "config error: " + names +
      " sets policy_model_name / policy_base_url / policy_api_key / model_call_timeout_seconds, "
      "which only the live model "
      "servers vllm_model, openai_model and azure_openai_model read; the configured model "
      "servers are " +
      (configured.empty() ? std::string("none") : configured) +
      ". Choose one with --model-type vllm_model (or openai_model, azure_openai_model), or drop "
      "the flag");
}

int run_serve() {
  // Children never re-merge: they read the fully resolved config
  // (docs/design/processes.md#one-binary).
  const char* instance = std::getenv("NEMO_GYM_CONFIG_PATH");
  if (!instance || !*instance)
    throw core::ConfigError(
        "gym serve: NEMO_GYM_CONFIG_PATH (the instance to serve) is not set; "
        "servers are started by `gym env start`");
  std::string yaml;
  std::string origin = "<NEMO_GYM_CONFIG_DICT>";
  if (const char* file = std::getenv("NEMO_GYM_CONFIG_DICT_FILE"); file && *file) {
    std::ifstream in(file);
    if (!in) throw core::ConfigError(std::string("cannot read NEMO_GYM_CONFIG_DICT_FILE ") + file);
    std::stringstream ss;
    ss << in.rdbuf();
    yaml = ss.str();
    origin = file;
  } else if (const char* dict = std::getenv("NEMO_GYM_CONFIG_DICT"); dict && *dict) {
    yaml = dict;
  } else {
    throw core::ConfigError(
        "gym serve: neither NEMO_GYM_CONFIG_DICT nor "
        "NEMO_GYM_CONFIG_DICT_FILE is set");
  }
  auto tree = core::parse_yaml(yaml, origin);
  if (!tree.is_object()) throw core::ConfigError(origin + " is not a mapping");
  return servers::serve_instance(tree.get_object(), instance, exporters::metrics_pipelines(),
                                 builtin_registry());
}

int run_config_show(const ConfigFlags& flags) {
  core::ConfigOrigins origins;
  const auto sources = to_sources(flags);
  auto cfg = core::load_config(sources, &origins);
  core::validate_server_instances(cfg, builtin_registry().catalog(), sources.search_roots,
                                  &origins);
  std::fputs(core::to_yaml(core::masked_secrets(cfg)).c_str(), stdout);
  return 0;
}

}  // namespace gym::cli
