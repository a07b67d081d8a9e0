// YAML config, overrides and the resolve steps of load_config: any text must give a config or a
// ConfigError, never a crash, a hang or unbounded memory (Debian's yaml-cpp 0.7.0 loops on some
// inputs; aliases can expand exponentially).
// Input: a YAML document, optionally followed by a line "%%" and one override per line
// ("a.b=v", "+a.b=v", "++a.b=v").
#include "core/config.h"
#include "core/config_steps.h"
#include "core/secrets.h"
#include "core/yaml_json.h"

#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {
namespace core = gym::core;
constexpr std::string_view kOverridesSeparator = "\n%%\n";
constexpr std::string_view kOrigin = "fuzz.yaml";

std::optional<std::string> fake_getenv(const std::string& name) {
  static const std::map<std::string, std::string> environment = {
      {"HOME", "/home/gym"}, {"POLICY_MODEL", "Qwen/Qwen3-8B"}, {"EMPTY", ""}};
  auto it = environment.find(name);
  if (it == environment.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    lines.push_back(text.substr(0, newline));
    if (newline == std::string_view::npos) break;
    text.remove_prefix(newline + 1);
  }
  return lines;
}

// The steps of load_config after the files are read, on one document and its overrides.
void resolve(std::string_view document, const std::vector<std::string_view>& overrides) {
  core::ConfigOrigins origins;
  boost::json::value tree = core::parse_yaml(document, kOrigin);
  boost::json::object cfg;
  if (tree.is_object()) cfg = std::move(tree.get_object());
  origins.record(cfg, std::string(kOrigin));
  for (const auto& text : overrides) {
    try {
      core::apply_override(cfg, text, &origins);
    } catch (const core::ConfigError&) {
      // load_config stops here; later overrides still exercise the rest.
    }
  }
  core::apply_directives(cfg, origins);
  core::check_missing_values(cfg, origins);
  core::resolve_interpolations(cfg, origins, fake_getenv);
  core::fill_defaults(cfg, origins);
  (void)core::DeploymentAddresses::from_config(cfg);
  (void)core::find_server_instances(cfg, &origins);
  static const core::ImplCatalog catalog = {
      {"responses_api_models", {"replay_model", "vllm_model", "openai_model"}},
      {"resources_servers", {"mcqa", "example_multi_step", "string_match"}},
      {"responses_api_agents", {"simple_agent"}}};
  core::validate_server_instances(cfg, catalog, {}, &origins);
  // What `gym config show` and the head server print, read back as the servers read it.
  (void)core::parse_yaml(core::to_yaml(core::masked_secrets(cfg)), "<NEMO_GYM_CONFIG_DICT>");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::size_t separator = text.find(kOverridesSeparator);
  std::vector<std::string_view> overrides;
  if (separator != std::string_view::npos) {
    overrides = lines_of(text.substr(separator + kOverridesSeparator.size()));
  }
  try {
    resolve(text.substr(0, separator), overrides);
  } catch (const core::ConfigError&) {
    // Every user-caused problem is a ConfigError; anything else escaping is a bug.
  }
  return 0;
}
