// gym: one binary for every verb; servers are this binary re-executed (R2).
#include "cli/commands.h"
#include "core/logging.h"
#include "orchestrator/orchestrator.h"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

namespace {

// NeMo Gym's legacy program names (runtime.md 9.5), installed as symlinks to gym.
const std::map<std::string, std::vector<std::string>> kLegacyNames = {
    {"ng_run", {"env", "start"}},
    {"ng_status", {"env", "status"}},
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  std::string program = std::filesystem::path(args[0]).filename().string();
  if (auto it = kLegacyNames.find(program); it != kLegacyNames.end()) {
    std::fprintf(stderr, "note: `%s` is deprecated; use `gym %s %s`\n", program.c_str(),
                 it->second[0].c_str(), it->second[1].c_str());
    args.insert(args.begin() + 1, it->second.begin(), it->second.end());
  }

  CLI::App app{"gym-cpp: NeMo Gym-compatible rollout runtime"};
  app.require_subcommand(0, 1);
  bool version = false, json = false, verbose = false;
  app.add_flag("--version", version, "Print the gym-cpp version and the NeMo Gym version");
  app.add_flag("--json", json, "Machine-readable output where supported");
  app.add_flag("-v,--verbose", verbose, "Debug logging");

  gym::cli::ConfigFlags flags;
  // Common flags of runtime.md 9.1; every one becomes a config source or override.
  auto add_config_flags = [&](CLI::App* sub) {
    sub->add_option("--config", flags.config_paths, "YAML config file (repeatable)")
        ->allow_extra_args(false);
    sub->add_option("--resources-server", flags.resources_servers,
                    "Environment preset NAME[/flavor] (repeatable)")
        ->allow_extra_args(false);
    sub->add_option("--model-type", flags.model_types, "Model preset NAME[/flavor] (repeatable)")
        ->allow_extra_args(false);
    sub->add_option("--search-dir", flags.search_dirs, "Extra search root (repeatable)")
        ->allow_extra_args(false);
    sub->add_option("-m,--model", flags.model, "policy_model_name");
    sub->add_option("--model-url", flags.model_url, "policy_base_url");
    sub->add_option("--model-api-key", flags.model_api_key, "policy_api_key");
    sub->add_flag("--json", json, "Machine-readable output where supported");
    sub->add_flag("-v,--verbose", verbose, "Debug logging (also in servers)");
    sub->allow_extras();  // overrides: key=v, +key=v, ++key=v
  };

  auto* serve = app.add_subcommand("serve", "");  // internal: a spawned server process
  serve->group("");                                // hidden from --help

  auto* env = app.add_subcommand("env", "Run servers");
  env->require_subcommand(1);
  auto* env_start = env->add_subcommand("start", "Start the head server and every configured server");
  add_config_flags(env_start);
  auto* env_status = env->add_subcommand("status", "Show the servers of a running deployment");
  add_config_flags(env_status);

  auto* config = app.add_subcommand("config", "Inspect the merged configuration");
  config->require_subcommand(1);
  auto* show = config->add_subcommand("show", "Print the merged, validated config as YAML");
  add_config_flags(show);

  gym::cli::DemoOptions demo_opts;
  auto* demo = app.add_subcommand("demo", "Start a resources server and exercise it end to end");
  add_config_flags(demo);
  demo->add_option("--tasks", demo_opts.tasks, "Number of tasks")->check(CLI::PositiveNumber);
  demo->add_option("--concurrency", demo_opts.concurrency, "Tasks in flight")
      ->check(CLI::PositiveNumber);

  std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11 wants it reversed
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;
  }
  gym::core::init_logging(verbose);
  flags.verbose = verbose;
  if (version) {
    if (json) {
      std::printf("{\"gym_cpp\":\"%s\",\"nemo_gym\":\"0.7.0\"}\n", GYM_VERSION);
    } else {
      std::printf("gym-cpp %s (NeMo Gym 0.7.0 compatible)\n", GYM_VERSION);
    }
    return 0;
  }
  try {
    for (auto* sub : {env_start, env_status, show, demo}) {
      if (!*sub) continue;
      flags.overrides = sub->remaining();
      flags.parse_order.clear();
      for (auto* opt : sub->parse_order()) flags.parse_order.push_back(opt->get_name());
    }
    if (*serve) return gym::cli::run_serve();
    if (*env_start) return gym::orchestrator::run_env_start(gym::cli::to_sources(flags));
    if (*env_status) return gym::orchestrator::run_env_status(gym::cli::to_sources(flags), json);
    if (*show) return gym::cli::run_config_show(flags);
    if (*demo) {
      demo_opts.config = flags;
      return gym::cli::run_demo(demo_opts);
    }
  } catch (const gym::core::ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  std::cout << app.help();
  return 1;
}
