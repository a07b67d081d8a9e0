#include "cli/usage.h"

#include "core/config.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace gym::cli {

namespace {

std::string got(const std::string& text) { return ", got '" + text + "'"; }

std::vector<std::string> flag_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* opt : app.get_options()) {
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

// A verb's full name: "gym eval run".
std::string path_of(const CLI::App* app, const std::string& program) {
  std::string path;
  for (; app && app->get_parent(); app = app->get_parent()) path = " " + app->get_name() + path;
  return program + path;
}

bool is_override(const std::string& arg) {
  return arg.starts_with('+') || arg.find('=') != std::string::npos;
}

}  // namespace

std::string overrides_help() {
  return "Overrides: any argument that is not a flag sets a config key (values are YAML):\n"
         "  key=value     replace an existing key, e.g. policy_model_name=large\n"
         "  +key=value    add a key that is not set yet\n"
         "  ++key=value   add or replace, creating parent mappings, e.g. "
         "++head_server.port=11001\n"
         "Dotted keys reach into mappings (a.b.c), list items by index (a.list.0). "
         "`gym config show` prints the merged result; `gym list` shows the environments, "
         "agents and model types.";
}

CLI::Validator whole_number(std::int64_t min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        std::int64_t value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || end != text.data() + text.size() || value < min)
          return "expects a whole number >= " + std::to_string(min) + got(text);
        return "";
      },
      "INT>=" + std::to_string(min));
}

CLI::Validator number_between(double lo, double hi) {
  auto range = "[" + CLI::detail::to_string(lo) + ", " + CLI::detail::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        double value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
            value < lo || value > hi)
          return "expects a number in " + range + got(text);
        return "";
      },
      "NUMBER in " + range);
}

std::optional<std::string> unknown_argument(const CLI::App& root,
                                            const std::vector<std::string>& args,
                                            const std::string& program) {
  const CLI::App* app = &root;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") break;
    if (arg.size() > 1 && arg[0] == '-') {
      const std::string name = arg.substr(0, arg.find('='));
      auto find = [app](const std::string& flag) {
        const CLI::Option* found = nullptr;
        for (const CLI::App* a = app; a && !found; a = a->get_parent())
          found = a->get_option_no_throw(flag);
        return found;
      };
      const CLI::Option* opt = find(name);
      // -vq: short flags given together.
      if (!opt && name[1] != '-' && name.size() > 2 &&
          std::all_of(name.begin() + 1, name.end(), [&](char c) {
            const auto* o = find(std::string("-") + c);
            return o && o->get_items_expected_min() == 0;
          }))
        continue;
      if (opt) {
        // Its value is the next argument (it may start with '-': --temperature -1 is checked by
        // the flag's own validator).
        if (opt->get_items_expected_min() > 0 && arg.find('=') == std::string::npos) ++i;
        continue;
      }
      std::string msg = path_of(app, program) + ": unknown flag " + name;
      if (auto hint = core::did_you_mean(name, flag_names(*app)))
        msg += "; did you mean " + *hint + "?";
      return msg + "\nRun `" + path_of(app, program) + " --help` for its flags.";
    }
    if (is_override(arg)) continue;
    if (const CLI::App* sub = [&]() -> const CLI::App* {
          for (const auto* s : app->get_subcommands({}))
            if (s->check_name(arg)) return s;
          return nullptr;
        }()) {
      app = sub;
      continue;
    }
    if (!app->get_subcommands({}).empty()) {
      std::vector<std::string> verbs;
      for (const auto* s : app->get_subcommands({}))
        if (!s->get_group().empty()) verbs.push_back(s->get_name());
      std::string msg = path_of(app, program) + ": unknown command '" + arg + "'";
      if (auto hint = core::did_you_mean(arg, verbs)) msg += "; did you mean '" + *hint + "'?";
      std::string list;
      for (const auto& v : verbs) list += (list.empty() ? "" : ", ") + v;
      return msg + "\nCommands: " + list + ". Run `" + path_of(app, program) + " --help` for more.";
    }
  }
  return std::nullopt;
}

}  // namespace gym::cli
