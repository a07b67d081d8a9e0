// `gym demo`: the collection of `make demo` on data the project generates itself (no network, no
// API key, no NeMo Gym data): demo tasks for several environments and recorded model answers,
// replayed by replay_model, collected with repeats by `gym eval run`. `--model-url` sends the
// same tasks to a live model instead.
#include "cli/commands.h"
#include "cli/eval_run.h"
#include "demo_data/demo_data.h"
#include "exporters/metrics_pipeline.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace gym::cli {

int run_demo(const DemoOptions& opt) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::absolute(opt.output_dir);
  demo_data::DemoOptions data_opt;
  data_opt.tasks_per_env = opt.tasks_per_env;
  auto data = demo_data::generate(dir / "data", data_opt);
  std::printf("Generated %zu environments of demo tasks in %s:\n", data.environments.size(),
              (dir / "data").c_str());
  for (const auto& env : data.environments)
    std::printf("  %-28s %d tasks, agent %s\n", env.resources_server.c_str(), env.tasks,
                env.agent.c_str());
  std::fflush(stdout);

  ConfigFlags flags = opt.config;
  for (const auto& env : data.environments) flags.resources_servers.push_back(env.resources_server);
  // Offline by default. With --model-url the same tasks go to a live endpoint (vllm_model
  // unless --model-type names another live model server); a local vLLM takes any key.
  const bool live = !flags.model_url.empty();
  if (!live) {
    flags.model_types.push_back("replay_model");
  } else {
    if (flags.model_types.empty()) flags.model_types.push_back("vllm_model");
    if (flags.model_api_key.empty()) flags.model_api_key = "EMPTY";
  }
  check_model_flags(flags, true, "gym demo");
  const fs::path output = dir / "rollouts" / "demo.jsonl";
  // Telemetry on, as a user would turn it on: every process appends its console-exporter lines
  // to one file, the orchestrator samples memory, and the report below reads the file. A fresh
  // file per run: the report keeps the last export of every process it finds.
  const fs::path metrics = dir / "telemetry" / "metrics.jsonl";
  fs::create_directories(metrics.parent_path());
  fs::remove(metrics);
  std::vector<std::string> overrides{
      "++input_jsonl_fpath=" + data.input.string(),
      "++output_jsonl_fpath=" + output.string(),
      "++num_repeats=" + std::to_string(opt.num_repeats),
      "++num_samples_in_parallel=" + std::to_string(opt.concurrency),
      "++telemetry.enabled=true",
      "++telemetry.exporter=console",
      "++telemetry.console_path=" + metrics.string(),
      "++telemetry.memory_profiling.enabled=true",
  };
  // The demo lasts seconds: export every second (unless the user chose an interval) so the
  // report sees the servers running, not only the final exports at shutdown.
  ::setenv("OTEL_METRIC_EXPORT_INTERVAL", "1000", /*overwrite=*/0);
  flags.overrides.insert(flags.overrides.begin(), overrides.begin(), overrides.end());
  int code = run_eval(to_sources(flags), /*no_serve=*/false, exporters::metrics_pipelines());

  std::printf("\nDemo files:\n  %s\n  %s\n", data.input.c_str(), data.rollouts.c_str());
  const std::string stem = (dir / "rollouts" / "demo").string();
  for (const char* suffix :
       {".jsonl", "_materialized_inputs.jsonl", "_failures.jsonl", "_aggregate_metrics.json"})
    if (fs::exists(stem + suffix)) std::printf("  %s%s\n", stem.c_str(), suffix);
  if (fs::exists(metrics)) {
    std::printf("  %s\n\nTelemetry (gym telemetry report %s):\n\n", metrics.c_str(),
                metrics.c_str());
    std::fflush(stdout);
    run_telemetry_report({metrics.string()}, /*json=*/false);
  }
  std::printf("gym demo: exit code %d\n", code);
  return code;
}

}  // namespace gym::cli
