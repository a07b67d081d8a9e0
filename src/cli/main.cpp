// gym: one binary for every verb; servers are this binary re-executed (R2).
#include "cli/commands.h"
#include "core/logging.h"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>

int main(int argc, char** argv) {
  CLI::App app{"gym-cpp: NeMo Gym-compatible rollout runtime"};
  app.require_subcommand(0, 1);
  bool version = false, json = false, verbose = false;
  app.add_flag("--version", version, "Print the gym-cpp version and the NeMo Gym version");
  app.add_flag("--json", json, "Machine-readable output where supported");
  app.add_flag("-v,--verbose", verbose, "Debug logging");

  gym::cli::ConfigFlags config_flags;
  auto add_config_flags = [&](CLI::App* sub) {
    sub->add_option("--config", config_flags.config_paths, "YAML config file (repeatable)")
        ->allow_extra_args(false);
    sub->allow_extras();  // overrides: key=v, +key=v, ++key=v
  };

  auto* serve = app.add_subcommand("serve", "");  // internal: a spawned server process
  serve->group("");  // hidden from --help

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

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;
  }
  gym::core::init_logging(verbose);
  if (version) {
    if (json) {
      std::printf("{\"gym_cpp\":\"%s\",\"nemo_gym\":\"0.7.0\"}\n", GYM_VERSION);
    } else {
      std::printf("gym-cpp %s (NeMo Gym 0.7.0 compatible)\n", GYM_VERSION);
    }
    return 0;
  }
  auto extras = [](CLI::App* sub) { return sub->remaining(); };
  try {
    if (*serve) return gym::cli::run_serve();
    if (*show) {
      config_flags.overrides = extras(show);
      return gym::cli::run_config_show(config_flags);
    }
    if (*demo) {
      config_flags.overrides = extras(demo);
      demo_opts.config = config_flags;
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
