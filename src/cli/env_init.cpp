#include "cli/env_init.h"

#include "cli/builtins.h"
#include "core/config_error.h"
#include "orchestrator/presets.h"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string_view>

namespace gym::cli {
namespace fs = std::filesystem;

namespace {

std::string replace_all(std::string text, std::string_view from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::string fill(std::string text, const std::string& name, const std::string& class_name) {
  return replace_all(replace_all(std::move(text), "@ENV_NAME@", name), "@ENV_CLASS@", class_name);
}

// Why `name` cannot be a new environment, or empty.
std::string name_problem(const std::string& name) {
  bool valid = !name.empty() && name.size() <= 64 && std::islower(name[0]);
  for (char c : name)
    valid = valid && (std::islower(static_cast<unsigned char>(c)) ||
                      std::isdigit(static_cast<unsigned char>(c)) || c == '_');
  if (!valid)
    return "'" + name +
           "' is not an environment name: use lower-case letters, digits and _, starting with a "
           "letter (it becomes a C++ function name and a config key), e.g. word_count";
  const auto catalog = builtin_registry().catalog();
  for (const auto& [type, names] : catalog)
    for (const auto& n : names)
      if (n == name) return "'" + name + "' is already a built-in " + type + " implementation";
  for (const auto& p : orchestrator::bundled_presets())
    if (p.name == name) return "an environment or model named '" + name + "' already exists";
  return "";
}

}  // namespace

std::string environment_class_name(const std::string& name) {
  std::string out;
  bool upper = true;
  for (char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out + "ResourcesServer";
}

int run_env_init(const std::string& name, const std::string& into) {
  if (auto problem = name_problem(name); !problem.empty())
    throw core::ConfigError("gym env init: " + problem);
  const fs::path root = into.empty() ? fs::path(GYM_SOURCE_ROOT) / "environments" : fs::path(into);
  std::error_code ec;
  // NeMo Gym's layout, <dir>/resources_servers/NAME: its folder is made as needed.
  if (root.filename() == "resources_servers") fs::create_directories(root, ec);
  if (!fs::is_directory(root, ec))
    throw core::ConfigError("gym env init: " + root.string() +
                            " is not a directory; give the environments/ folder of your gym-cpp "
                            "checkout, or a resources_servers/ folder of your own, with --into "
                            "DIR");
  const fs::path folder = root / name;
  if (fs::exists(folder, ec))
    throw core::ConfigError("gym env init: " + folder.string() +
                            " already exists; nothing was written (choose another name or remove "
                            "the folder yourself)");
  const std::string class_name = environment_class_name(name);
  for (const auto& file : environment_template()) {
    const fs::path path = folder / fill(file.path, name, class_name);
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out << fill(file.text, name, class_name);
    if (!out.flush()) throw std::runtime_error("gym env init: cannot write " + path.string());
  }
  std::printf(
      "Wrote %s (%s):\n"
      "  %s.cpp                  the tool and the verifier\n"
      "  configs/%s.yaml         the preset (--resources-server %s)\n"
      "  data/example.jsonl, data/example_rollouts.jsonl   example rows and recorded rollouts\n"
      "  tests/%s_test.cpp       its tests\n",
      folder.c_str(), class_name.c_str(), name.c_str(), name.c_str(), name.c_str(), name.c_str());
  const fs::path source_environments = fs::path(GYM_SOURCE_ROOT) / "environments";
  if (fs::equivalent(root, source_environments, ec)) {
    std::printf(
        "Next: build and test it (from the checkout: make test, or cmake --build build && ctest "
        "--test-dir build -R %s), then\n"
        "  gym eval run --resources-server %s --model-type replay_model --split example "
        "--output out/%s.jsonl\n"
        "See docs/guides/adding-an-environment.md.\n",
        class_name.c_str(), name.c_str(), name.c_str());
    return 0;
  }
  // Outside the checkout no build sees it by itself: gym-cpp's build takes the directory, and
  // the search root above a resources_servers/ folder finds its preset and data at run time.
  const fs::path dir = fs::absolute(root, ec).lexically_normal();
  const fs::path parent = dir.parent_path();
  std::printf(
      "It is C++: a gym built with it runs it. Build gym-cpp with this directory (the checkout "
      "this gym came from is %s):\n"
      "  cmake -S <gym-cpp checkout> -B build -DGYM_EXTRA_ENVIRONMENTS=%s\n"
      "  cmake --build build --target gym environments_unit_tests && ctest --test-dir build -R "
      "%s\n"
      "  cmake --install build --prefix <prefix>   (or use build/src/cli/gym)\n",
      GYM_SOURCE_ROOT, dir.c_str(), class_name.c_str());
  if (dir.filename() == "resources_servers") {
    std::printf(
        "Then, from any directory:\n"
        "  gym list --search-dir %s\n"
        "  gym eval run --search-dir %s --resources-server %s --model-type replay_model "
        "--split example --output out/%s.jsonl\n",
        parent.c_str(), parent.c_str(), name.c_str(), name.c_str());
  } else {
    std::printf(
        "Then: gym eval run --resources-server %s --model-type replay_model --agent "
        "%s_simple_agent --input %s --output out/%s.jsonl\n"
        "(write it with --into <dir>/resources_servers instead, NeMo Gym's layout, and "
        "`--search-dir <dir>` finds its preset and data: `gym list --search-dir <dir>`, "
        "`--split example`)\n",
        name.c_str(), name.c_str(), (folder / "data" / "example.jsonl").c_str(), name.c_str());
  }
  std::printf("See docs/guides/adding-an-environment.md.\n");
  return 0;
}

}  // namespace gym::cli
