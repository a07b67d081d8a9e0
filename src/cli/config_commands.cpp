// `gym serve` (a spawned server) and `gym config show`.
#include "cli/commands.h"
#include "core/yaml_json.h"
#include "servers/registry.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gym::cli {

core::ConfigSources to_sources(const ConfigFlags& flags) {
  auto s = core::default_sources();
  s.config_paths = flags.config_paths;
  s.overrides = flags.overrides;
  return s;
}

int run_serve() {
  // Children never re-merge: they read the fully resolved config (runtime.md 3.4, R2).
  const char* instance = std::getenv("NEMO_GYM_CONFIG_PATH");
  if (!instance || !*instance)
    throw core::ConfigError("gym serve: NEMO_GYM_CONFIG_PATH (the instance to serve) is not set; "
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
    throw core::ConfigError("gym serve: neither NEMO_GYM_CONFIG_DICT nor "
                            "NEMO_GYM_CONFIG_DICT_FILE is set");
  }
  auto tree = core::parse_yaml(yaml, origin);
  if (!tree.is_object()) throw core::ConfigError(origin + " is not a mapping");
  return servers::serve_instance(tree.get_object(), instance);
}

int run_config_show(const ConfigFlags& flags) {
  core::ConfigOrigins origins;
  auto cfg = core::load_config(to_sources(flags), &origins);
  core::validate_server_instances(cfg, servers::builtin_registry().catalog(), &origins);
  std::fputs(core::to_yaml(cfg).c_str(), stdout);
  return 0;
}

}  // namespace gym::cli
