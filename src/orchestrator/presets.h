#pragma once
// Named selectors: `--resources-server NAME[/flavor]` and `--model-type NAME[/flavor]` become
// config files, found in the search roots or else taken from the presets compiled into the binary.
#include <optional>
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

// The bundled preset at NeMo Gym's path of it, `<server_type>/<name>/configs/<flavor>.yaml`
// (resources_servers or responses_api_models; `./` and the like are normalised): its YAML text,
// or nullopt when no preset has that path. core::ConfigSources::bundled_config.
std::optional<std::string> bundled_preset_text(const std::string& path);

// `message` with every preset file written by selector_config_path replaced by the preset's
// name ("the built-in preset resources_servers/mcqa/configs/mcqa.yaml"): those files are
// removed at exit, so a message must not send the user looking for them.
std::string name_presets_in(std::string message);

}  // namespace gym::orchestrator
