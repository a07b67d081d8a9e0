#pragma once
// gym subcommands. Each returns the process exit code
// (docs/design/failures-and-retries.md#exit-codes).
#include "core/config.h"

#include <string>
#include <string_view>
#include <vector>

namespace gym::cli {

// Flags shared by the verbs that load a config.
struct ConfigFlags {
  std::vector<std::string> config_paths;        // --config
  std::vector<std::string> resources_servers;   // --resources-server NAME[/flavor]
  std::vector<std::string> model_types;         // --model-type NAME[/flavor]
  std::vector<std::string> search_dirs;         // --search-dir (NEMO_GYM_EXTRA_ROOTS)
  std::string model, model_url, model_api_key;  // -m, --model-url, --model-api-key
  std::string model_timeout;                    // --model-timeout SECONDS
  std::string env_file;                         // --env-file FILE
  bool no_env_file = false;                     // --no-env-file
  std::string initial_config;                   // --initial-config FILE
  bool verbose = false;
  std::vector<std::string> overrides;    // anything that is not a flag
  std::vector<std::string> parse_order;  // option names in command-line order
};
// Sources for the config loader: config files and selector presets coalesced into one list in
// flag order, flags turned into ++overrides, then the user's overrides; the env
// file and initial config flags; the bundled presets for NeMo Gym's preset paths.
core::ConfigSources to_sources(const ConfigFlags& flags);

// --model, --model-url and --model-api-key set policy_model_name, policy_base_url and
// policy_api_key, which only live model servers read (vllm_model, openai_model,
// azure_openai_model). Throws core::ConfigError when one is given but no configured model server
// reads it, or when the verb starts no server (`starts_servers` false: env status, --no-serve).
void check_model_flags(const ConfigFlags& flags, bool starts_servers, std::string_view verb);

// Hidden: serve the instance named by NEMO_GYM_CONFIG_PATH from NEMO_GYM_CONFIG_DICT(_FILE).
int run_serve();
// Prints the merged, validated config as YAML.
int run_config_show(const ConfigFlags& flags);

struct DemoOptions {
  ConfigFlags config;
  std::string output_dir = "gym-demo";
  int tasks_per_env = 100;
  int num_repeats = 4;
  int concurrency = 64;
};
// `make demo`: generates demo data, then `gym eval run` with replay_model over it.
int run_demo(const DemoOptions& options);

// `gym list`: environments, agents and model types the selectors accept (`search_dirs`, as
// --search-dir, looked in first), and the built-in implementations; one JSON object with `json`.
int run_list(bool json, const std::vector<std::string>& search_dirs = {});

// `gym telemetry report FILE...` (docs/guides/telemetry-report.md): the summary of the
// console-exporter files (`-` reads stdin) on stdout, as text or as JSON. Exit 1 when a file cannot
// be read or no file holds a metrics export.
int run_telemetry_report(const std::vector<std::string>& files, bool json);

}  // namespace gym::cli
