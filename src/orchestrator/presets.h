#pragma once
// Named selectors (runtime.md 6.3): `--resources-server NAME[/flavor]` and
// `--model-type NAME[/flavor]` become config files, found in the search roots or else taken
// from the presets compiled into the binary.
#include <string>
#include <vector>

namespace gym::orchestrator {

struct Preset {
  const char* server_type;  // resources_servers | responses_api_models
  const char* name;         // NAME
  const char* flavor;       // file stem
  const char* yaml;
};

// Every preset compiled into this binary (generated from the configs/ folders at build time).
const std::vector<Preset>& bundled_presets();

// The config file for a selector: `<server_type>/NAME/configs/<flavor>.yaml` from the search
// roots, else the bundled preset written to a private temporary file. Throws core::ConfigError
// listing the known names when neither exists.
std::string selector_config_path(const std::string& server_type, const std::string& selector,
                                 const std::vector<std::string>& search_roots);

// `message` with every preset file written by selector_config_path replaced by the preset's
// name ("the built-in preset resources_servers/mcqa/configs/mcqa.yaml"): those files are
// removed at exit, so a message must not send the user looking for them.
std::string name_presets_in(std::string message);

}  // namespace gym::orchestrator
