#include "orchestrator/presets.h"

#include "core/config.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

namespace gym::orchestrator {
namespace fs = std::filesystem;

namespace {

// Written preset file -> what a message calls it (the file is gone when the user reads it).
std::map<std::string, std::string>& preset_labels() {
  static std::map<std::string, std::string> labels;
  return labels;
}

// Bundled presets are written once per process into one private folder, removed at exit.
std::string materialize(const Preset& p) {
  static const fs::path dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "gym-presets-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temporary folder");
    static const fs::path path = tmpl;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(path, ec);
    });
    return path;
  }();
  auto file = dir / (std::string(p.server_type) + "-" + p.name + "-" + p.flavor + ".yaml");
  if (!fs::exists(file)) std::ofstream(file) << p.yaml;
  preset_labels()[file.string()] = std::string("the built-in preset ") + p.server_type + "/" +
                                   p.name + "/configs/" + p.flavor + ".yaml";
  return file.string();
}

}  // namespace

std::string selector_config_path(const std::string& server_type, const std::string& selector,
                                 const std::vector<std::string>& search_roots) {
  auto slash = selector.find('/');
  std::string name = selector.substr(0, slash);
  std::string flavor = slash == std::string::npos ? name : selector.substr(slash + 1);
  std::string relative = server_type + "/" + name + "/configs/" + flavor + ".yaml";
  for (const auto& root : search_roots) {
    fs::path candidate = fs::path(root) / relative;
    if (fs::exists(candidate)) return candidate.string();
  }
  std::vector<std::string> known;
  for (const auto& p : bundled_presets()) {
    if (p.server_type != server_type) continue;
    if (p.name == name && p.flavor == flavor) return materialize(p);
    known.push_back(p.name == std::string(p.flavor) ? p.name
                                                    : std::string(p.name) + "/" + p.flavor);
  }
  std::string msg = "no config for " + server_type + " '" + selector + "': " + relative +
                    " is not in the search roots and no preset is built in";
  if (auto hint = core::did_you_mean(selector, known)) msg += "; did you mean '" + *hint + "'?";
  msg += "\nbuilt-in presets:";
  for (const auto& k : known) msg += " " + k;
  throw core::ConfigError(msg);
}

std::optional<std::string> bundled_preset_text(const std::string& path) {
  const fs::path normal = fs::path(path).lexically_normal();
  if (normal.is_absolute()) return std::nullopt;
  std::vector<std::string> parts;
  for (const auto& part : normal) parts.push_back(part.string());
  if (parts.size() != 4 || parts[2] != "configs" || fs::path(parts[3]).extension() != ".yaml")
    return std::nullopt;
  const std::string flavor = fs::path(parts[3]).stem().string();
  for (const auto& p : bundled_presets())
    if (parts[0] == p.server_type && parts[1] == p.name && flavor == p.flavor) return p.yaml;
  return std::nullopt;
}

std::string name_presets_in(std::string message) {
  for (const auto& [path, label] : preset_labels())
    for (auto at = message.find(path); at != std::string::npos;
         at = message.find(path, at + label.size()))
      message.replace(at, path.size(), label);
  return message;
}

}  // namespace gym::orchestrator
