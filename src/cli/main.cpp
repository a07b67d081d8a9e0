// gym: one binary for every verb; servers are this binary re-executed (R2).
#include "cli/builtins.h"
#include "cli/commands.h"
#include "cli/eval_run.h"
#include "core/logging.h"
#include "exporters/metrics_pipeline.h"
#include "orchestrator/orchestrator.h"

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

namespace {

// NeMo Gym's legacy program names (runtime.md 9.5), installed as symlinks to gym.
const std::map<std::string, std::vector<std::string>> kLegacyNames = {
    {"ng_run", {"env", "start"}},
    {"ng_status", {"env", "status"}},
    {"ng_collect_rollouts", {"eval", "run", "--no-serve"}},
    {"ng_e2e_collect_rollouts", {"eval", "run"}},
};

// `gym eval run` flags (runtime.md 7.1, 9.4); each becomes a ++override of its config key.
struct EvalFlags {
  bool no_serve = false, resume = false, disable_aggregation = false;
  std::string agent, input, output, limit, num_repeats, concurrency, split, temperature, top_p,
      max_output_tokens, prompt_config;

  std::vector<std::string> overrides() const {
    std::vector<std::string> out;
    auto add = [&](const char* key, const std::string& value) {
      if (!value.empty()) out.push_back(std::string("++") + key + "=" + value);
    };
    add("agent_name", agent);
    add("input_jsonl_fpath", input);
    add("output_jsonl_fpath", output);
    add("limit", limit);
    add("num_repeats", num_repeats);
    add("num_samples_in_parallel", concurrency);
    add("split", split);
    add("responses_create_params.temperature", temperature);
    add("responses_create_params.top_p", top_p);
    add("responses_create_params.max_output_tokens", max_output_tokens);
    add("prompt_config", prompt_config);
    if (resume) out.push_back("++resume_from_cache=true");
    if (disable_aggregation) out.push_back("++disable_aggregation=true");
    return out;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  std::string program = std::filesystem::path(args[0]).filename().string();
  if (auto it = kLegacyNames.find(program); it != kLegacyNames.end()) {
    std::string verb;
    for (const auto& word : it->second) verb += " " + word;
    std::fprintf(stderr, "note: `%s` is deprecated; use `gym%s`\n", program.c_str(), verb.c_str());
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
  serve->group("");                               // hidden from --help

  auto* env = app.add_subcommand("env", "Run servers");
  env->require_subcommand(1);
  auto* env_start =
      env->add_subcommand("start", "Start the head server and every configured server");
  add_config_flags(env_start);
  auto* env_status = env->add_subcommand("status", "Show the servers of a running deployment");
  add_config_flags(env_status);

  auto* config = app.add_subcommand("config", "Inspect the merged configuration");
  config->require_subcommand(1);
  auto* show = config->add_subcommand("show", "Print the merged, validated config as YAML");
  add_config_flags(show);

  EvalFlags eval_flags;
  auto* eval = app.add_subcommand("eval", "Collect rollouts");
  eval->require_subcommand(1);
  auto* eval_run = eval->add_subcommand(
      "run",
      "Collect rollouts: start the servers (or use a running deployment with --no-serve), "
      "run every input row through its agent, aggregate");
  add_config_flags(eval_run);
  eval_run->add_flag("--no-serve", eval_flags.no_serve,
                     "Use the deployment behind the head server instead of starting servers");
  eval_run->add_flag("--resume", eval_flags.resume, "Continue a previous run of the same output");
  eval_run->add_option("-a,--agent", eval_flags.agent, "Agent for rows without agent_ref");
  eval_run->add_option("-i,--input", eval_flags.input, "Input JSONL");
  eval_run->add_option("-o,--output", eval_flags.output, "Rollouts JSONL to write");
  eval_run->add_option("--limit", eval_flags.limit, "Read only the first N rows");
  eval_run->add_option("--num-repeats", eval_flags.num_repeats, "Rollouts per row");
  eval_run->add_option("--concurrency", eval_flags.concurrency, "Rollouts in flight at most");
  eval_run->add_option("--split", eval_flags.split, "Dataset split to collate without --input");
  eval_run->add_option("--temperature", eval_flags.temperature,
                       "responses_create_params.temperature");
  eval_run->add_option("--top-p", eval_flags.top_p, "responses_create_params.top_p");
  eval_run->add_option("--max-output-tokens", eval_flags.max_output_tokens,
                       "responses_create_params.max_output_tokens");
  eval_run->add_flag("--disable-aggregation", eval_flags.disable_aggregation,
                     "Skip the aggregate metrics");
  eval_run->add_option("--prompt-config", eval_flags.prompt_config,
                       "Not supported in this release: setting prompt_config is a config error");

  gym::cli::DemoOptions demo_opts;
  auto* demo = app.add_subcommand(
      "demo", "Generate demo tasks for several environments and collect them with replay_model");
  add_config_flags(demo);
  demo->add_option("--output-dir", demo_opts.output_dir, "Where the demo writes its files")
      ->capture_default_str();
  demo->add_option("--tasks-per-env", demo_opts.tasks_per_env, "Demo tasks per environment")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  demo->add_option("--num-repeats", demo_opts.num_repeats, "Rollouts per task")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  demo->add_option("--concurrency", demo_opts.concurrency, "Rollouts in flight")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  std::vector<std::string> report_files;
  auto* telemetry = app.add_subcommand("telemetry", "Read the telemetry a run wrote");
  telemetry->require_subcommand(1);
  auto* telemetry_report = telemetry->add_subcommand(
      "report", "Summarise a run from console-exporter files (telemetry.console_path)");
  telemetry_report->add_option("FILE", report_files, "Console-exporter output; - reads stdin")
      ->required();
  telemetry_report->add_flag("--json", json, "The same figures as one JSON object");

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
    for (auto* sub : {env_start, env_status, show, demo, eval_run}) {
      if (!*sub) continue;
      flags.overrides = sub->remaining();
      flags.parse_order.clear();
      for (auto* opt : sub->parse_order()) flags.parse_order.push_back(opt->get_name());
    }
    if (*serve) return gym::cli::run_serve();
    if (*env_start)
      return gym::orchestrator::run_env_start(gym::cli::to_sources(flags),
                                              gym::exporters::metrics_pipelines(),
                                              gym::cli::builtin_registry().catalog());
    if (*env_status) return gym::orchestrator::run_env_status(gym::cli::to_sources(flags), json);
    if (*show) return gym::cli::run_config_show(flags);
    if (*telemetry_report) return gym::cli::run_telemetry_report(report_files, json);
    if (*eval_run) {
      auto eval_overrides = eval_flags.overrides();
      flags.overrides.insert(flags.overrides.begin(), eval_overrides.begin(), eval_overrides.end());
      return gym::cli::run_eval(gym::cli::to_sources(flags), eval_flags.no_serve,
                                gym::exporters::metrics_pipelines());
    }
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
