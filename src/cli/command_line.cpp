// The gym command line: cli/command_line.h.
#include "cli/command_line.h"

#include "cli/builtins.h"
#include "cli/env_init.h"
#include "cli/eval_run.h"
#include "cli/usage.h"
#include "core/logging.h"
#include "exporters/metrics_pipeline.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator/presets.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <utility>

namespace gym::cli {

namespace {

// NeMo Gym's legacy program names (docs/design/wire-compatibility.md#command-line), installed as
// symlinks to gym.
const std::map<std::string, std::vector<std::string>> kLegacyNames = {
    {"ng_run", {"env", "start"}},
    {"ng_status", {"env", "status"}},
    {"ng_collect_rollouts", {"eval", "run", "--no-serve"}},
    {"ng_e2e_collect_rollouts", {"eval", "run"}},
};

// `gym eval run` flags (docs/guides/evaluation.md#flags-and-config-keys); each becomes a ++override
// of its config key.
struct EvalFlags {
  bool no_serve = false, resume = false, disable_aggregation = false, quiet = false;
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
    if (quiet) out.push_back("++quiet=true");
    return out;
  }
};

// `gym eval submit` flags beyond those of `gym eval run`: the `slurm:` block's keys.
struct SubmitFlags {
  bool dry_run = false, wait = false;
  std::string nodes, partition, account, time, job_name;
  std::vector<std::string> sbatch;

  std::vector<std::string> overrides() const {
    std::vector<std::string> out;
    auto add = [&](const char* key, const std::string& value) {
      if (!value.empty()) out.push_back(std::string("++slurm.") + key + "=" + value);
    };
    add("nodes", nodes);
    add("partition", partition);
    add("account", account);
    add("time", time);
    add("job_name", job_name);
    // A list override: the extra #SBATCH lines, each kept a string.
    if (!sbatch.empty()) {
      std::string list;
      for (const auto& line : sbatch) {
        std::string quoted = "'";
        for (char c : line) quoted += c == '\'' ? std::string("''") : std::string(1, c);
        list += (list.empty() ? "" : ",") + quoted + "'";
      }
      out.push_back("++slurm.sbatch_args=[" + list + "]");
    }
    return out;
  }
};

// Applies NeMo Gym's legacy program names: `ng_run ...` is `gym env start ...`. Returns the
// name usage lines and messages give the program.
std::string apply_legacy_name(std::vector<std::string>& args) {
  std::string program = std::filesystem::path(args[0]).filename().string();
  if (auto it = kLegacyNames.find(program); it != kLegacyNames.end()) {
    std::string verb;
    for (const auto& word : it->second) verb += " " + word;
    std::fprintf(stderr, "note: `%s` is deprecated; use `gym%s`\n", program.c_str(), verb.c_str());
    args.insert(args.begin() + 1, it->second.begin(), it->second.end());
    return "gym";
  }
  return program.empty() ? "gym" : program;
}

// A message about the config, naming built-in presets rather than their deleted temp files.
void print_error(const char* prefix, const std::exception& e) {
  std::fprintf(stderr, "%s%s\n", prefix, orchestrator::name_presets_in(e.what()).c_str());
}

// Every verb, its flags and where they land; parse() says which verb was given, with what.
class Cli {
 public:
  explicit Cli(std::string program) : program_(std::move(program)) {
    app_.name(program_);
    app_.footer(overrides_help());
    app_.require_subcommand(0, 1);
    app_.add_flag("--version", version_, "Print the gym-cpp version and the NeMo Gym version");
    app_.add_flag("--json", json_, "Machine-readable output where supported");
    app_.add_flag("-v,--verbose", verbose_, "Debug logging");
    serve_ = app_.add_subcommand("serve", "");  // internal: a spawned server process
    serve_->group("");                          // hidden from --help
    add_env_and_config();
    add_eval_run();
    add_demo();
    add_telemetry_report();
    list_ = app_.add_subcommand("list", "Show the environments, agents and model types to run");
    list_->add_flag("--json", json_, "One JSON object");
    list_
        ->add_option("--search-dir", flags_.search_dirs,
                     "Extra search root, as for gym eval run (repeatable)")
        ->allow_extra_args(false);
  }

  Invocation parse(const std::vector<std::string>& args) {
    Invocation inv;
    inv.program = program_;
    std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11 wants it so
    if (auto problem = unknown_argument(app_, {args.begin() + 1, args.end()}, program_)) {
      std::fprintf(stderr, "%s\n", problem->c_str());
      inv.exit_code = 1;
      return inv;
    }
    try {
      app_.parse(reversed);
    } catch (const CLI::ParseError& e) {
      inv.exit_code = app_.exit(e) == 0 ? 0 : 1;
      return inv;
    }
    inv.json = json_;
    inv.verbose = verbose_;
    inv.verb = verb();
    if (inv.verb == Verb::none) {
      std::cout << app_.help();
      inv.exit_code = 1;
      return inv;
    }
    inv.config = flags_;
    inv.config.verbose = verbose_;
    for (auto* sub : {env_start_, env_status_, config_show_, demo_, eval_run_, eval_submit_}) {
      if (!*sub) continue;
      inv.config.overrides = sub->remaining();
      for (auto* opt : sub->parse_order()) inv.config.parse_order.push_back(opt->get_name());
    }
    // The verb's own flags come first, as overrides of their config keys.
    std::vector<std::string> verb_overrides;
    if (inv.verb == Verb::eval_run || inv.verb == Verb::eval_submit)
      verb_overrides = eval_flags_.overrides();
    if (inv.verb == Verb::eval_submit) {
      const auto slurm = submit_flags_.overrides();
      verb_overrides.insert(verb_overrides.end(), slurm.begin(), slurm.end());
      // `gym eval submit` hands its own command line on to the job's `gym eval run`.
      auto eval = std::find(args.begin() + 1, args.end(), "eval");
      if (eval != args.end() && eval + 1 != args.end() && eval[1] == "submit")
        inv.submit.submit_args.assign(eval + 2, args.end());
      inv.submit.dry_run = submit_flags_.dry_run;
      inv.submit.wait = submit_flags_.wait;
    }
    inv.config.overrides.insert(inv.config.overrides.begin(), verb_overrides.begin(),
                                verb_overrides.end());
    inv.no_serve = eval_flags_.no_serve;
    inv.demo = demo_options_;
    inv.report_files = report_files_;
    inv.init_name = init_name_;
    inv.init_into = init_into_;
    return inv;
  }

 private:
  // The verb the parsed command line names.
  Verb verb() const {
    if (version_) return Verb::version;
    const std::pair<CLI::App*, Verb> verbs[] = {
        {serve_, Verb::serve},
        {env_start_, Verb::env_start},
        {env_status_, Verb::env_status},
        {env_init_, Verb::env_init},
        {config_show_, Verb::config_show},
        {eval_run_, Verb::eval_run},
        {eval_submit_, Verb::eval_submit},
        {demo_, Verb::demo},
        {telemetry_report_, Verb::telemetry_report},
        {list_, Verb::list},
    };
    for (const auto& [sub, v] : verbs)
      if (*sub) return v;
    return Verb::none;
  }

  // Common flags of every verb that loads a config; each becomes a config source or override.
  void add_config_flags(CLI::App* sub) {
    sub->add_option("--config", flags_.config_paths, "YAML config file (repeatable)")
        ->allow_extra_args(false);
    sub->add_option("--resources-server", flags_.resources_servers,
                    "Environment preset NAME[/flavor] (repeatable)")
        ->allow_extra_args(false);
    sub->add_option("--model-type", flags_.model_types, "Model preset NAME[/flavor] (repeatable)")
        ->allow_extra_args(false);
    sub->add_option("--search-dir", flags_.search_dirs, "Extra search root (repeatable)")
        ->allow_extra_args(false);
    sub->add_option("-m,--model", flags_.model, "policy_model_name");
    sub->add_option("--model-url", flags_.model_url, "policy_base_url");
    sub->add_option("--model-timeout", flags_.model_timeout,
                    "model_call_timeout_seconds: the longest one attempt of a call to the model "
                    "endpoint may take (0: none)");
    sub->add_option("--model-api-key", flags_.model_api_key, "policy_api_key");
    auto* env_file = sub->add_option("--env-file", flags_.env_file,
                                     "Use this env file instead of looking for env.yaml");
    sub->add_flag("--no-env-file", flags_.no_env_file, "Load no env.yaml")->excludes(env_file);
    sub->add_option("--initial-config", flags_.initial_config,
                    "YAML mapping merged above env.yaml and below the overrides; its config_paths "
                    "are used when the command line gives none");
    sub->add_flag("--json", json_, "Machine-readable output where supported");
    sub->add_flag("-v,--verbose", verbose_, "Debug logging (also in servers)");
    sub->allow_extras();  // overrides: key=v, +key=v, ++key=v
    sub->footer(overrides_help());
  }

  void add_env_and_config() {
    auto* env = app_.add_subcommand("env", "Run servers");
    env->require_subcommand(1);
    env_start_ = env->add_subcommand("start", "Start the head server and every configured server");
    add_config_flags(env_start_);
    env_status_ = env->add_subcommand("status", "Show the servers of a running deployment");
    add_config_flags(env_status_);
    env_init_ = env->add_subcommand("init",
                                    "Write a new C++ environment folder that builds and "
                                    "passes its tests as written");
    env_init_->add_option("name", init_name_, "The environment's name, e.g. word_count")
        ->required();
    env_init_->add_option("--into", init_into_,
                          "The folder to write it in (default: environments/ of the gym-cpp "
                          "source tree this binary was built from)");
    auto* config = app_.add_subcommand("config", "Inspect the merged configuration");
    config->require_subcommand(1);
    config_show_ = config->add_subcommand("show", "Print the merged, validated config as YAML");
    add_config_flags(config_show_);
  }

  void add_eval_run() {
    auto* eval = app_.add_subcommand("eval", "Collect rollouts");
    eval->require_subcommand(1);
    eval_run_ = eval->add_subcommand(
        "run",
        "Collect rollouts: start the servers (or use a running deployment with --no-serve), "
        "run every input row through its agent, aggregate");
    eval_run_->add_flag("--no-serve", eval_flags_.no_serve,
                        "Use the deployment behind the head server instead of starting servers");
    add_collection_flags(eval_run_);
    eval_submit_ = eval->add_subcommand(
        "submit",
        "Run `gym eval run` as a Slurm batch job: the servers spread over the allocated nodes "
        "(srun), the collection on the first; the job script is written beside the output");
    add_collection_flags(eval_submit_);
    auto& s = submit_flags_;
    eval_submit_->add_option("--nodes", s.nodes, "slurm.nodes: nodes to allocate (default 1)")
        ->check(whole_number(1));
    eval_submit_->add_option("--partition", s.partition, "slurm.partition");
    eval_submit_->add_option("--account", s.account, "slurm.account");
    eval_submit_->add_option("--time", s.time, "slurm.time: the job's time limit, e.g. 04:00:00");
    eval_submit_->add_option("--job-name", s.job_name, "slurm.job_name (default gym-eval)");
    eval_submit_
        ->add_option("--sbatch", s.sbatch,
                     "slurm.sbatch_args: an extra #SBATCH line, e.g. --sbatch=--exclusive "
                     "(repeatable)")
        ->allow_extra_args(false);
    eval_submit_->add_flag("--dry-run", s.dry_run,
                           "Print the job script; write and submit nothing");
    eval_submit_->add_flag("--wait", s.wait,
                           "Stream the job's output until it ends; exit with its exit code");
  }

  // The flags `gym eval run` and `gym eval submit` share.
  void add_collection_flags(CLI::App* run) {
    add_config_flags(run);
    auto& f = eval_flags_;
    run->add_flag("--resume", f.resume, "Continue a previous run of the same output");
    run->add_option("-a,--agent", f.agent, "Agent for rows without agent_ref");
    run->add_option("-i,--input", f.input, "Input JSONL");
    run->add_option("-o,--output", f.output, "Rollouts JSONL to write");
    run->add_option("--limit", f.limit, "Read only the first N rows (0: all)")
        ->check(whole_number(0));
    run->add_option("--num-repeats", f.num_repeats, "Rollouts per row")->check(whole_number(1));
    run->add_option("--concurrency", f.concurrency, "Rollouts in flight at most")
        ->check(whole_number(1));
    run->add_option("--split", f.split, "Dataset split to collate without --input");
    run->add_option("--temperature", f.temperature, "responses_create_params.temperature")
        ->check(number_between(0, 2));
    run->add_option("--top-p", f.top_p, "responses_create_params.top_p")
        ->check(number_between(0, 1));
    run->add_option("--max-output-tokens", f.max_output_tokens,
                    "responses_create_params.max_output_tokens")
        ->check(whole_number(1));
    run->add_flag("-q,--quiet", f.quiet,
                  "quiet: print only warnings, errors and the result; the servers' output goes "
                  "to <output stem>_logs/<server>.log");
    run->add_flag("--disable-aggregation", f.disable_aggregation, "Skip the aggregate metrics");
    run->add_option("--prompt-config", f.prompt_config,
                    "Not supported in this release: setting prompt_config is a config error");
  }

  void add_demo() {
    demo_ = app_.add_subcommand(
        "demo", "Generate demo tasks for several environments and collect them with replay_model");
    add_config_flags(demo_);
    demo_->add_option("--output-dir", demo_options_.output_dir, "Where the demo writes its files")
        ->capture_default_str();
    demo_->add_option("--tasks-per-env", demo_options_.tasks_per_env, "Demo tasks per environment")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    demo_->add_option("--num-repeats", demo_options_.num_repeats, "Rollouts per task")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    demo_->add_option("--concurrency", demo_options_.concurrency, "Rollouts in flight")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
  }

  void add_telemetry_report() {
    auto* telemetry = app_.add_subcommand("telemetry", "Read the telemetry a run wrote");
    telemetry->require_subcommand(1);
    telemetry_report_ = telemetry->add_subcommand(
        "report", "Summarise a run from console-exporter files (telemetry.console_path)");
    telemetry_report_->add_option("FILE", report_files_, "Console-exporter output; - reads stdin")
        ->required();
    telemetry_report_->add_flag("--json", json_, "The same figures as one JSON object");
  }

  std::string program_;
  CLI::App app_{"gym-cpp: NeMo Gym-compatible rollout runtime"};
  bool version_ = false, json_ = false, verbose_ = false;
  ConfigFlags flags_;
  EvalFlags eval_flags_;
  SubmitFlags submit_flags_;
  DemoOptions demo_options_;
  std::vector<std::string> report_files_;
  std::string init_name_, init_into_;
  CLI::App *serve_ = nullptr, *env_start_ = nullptr, *env_status_ = nullptr, *env_init_ = nullptr,
           *config_show_ = nullptr, *eval_run_ = nullptr, *eval_submit_ = nullptr, *demo_ = nullptr,
           *telemetry_report_ = nullptr, *list_ = nullptr;
};

}  // namespace

Invocation parse_command_line(std::vector<std::string> args) {
  if (args.empty()) args.push_back("gym");
  Cli cli(apply_legacy_name(args));
  return cli.parse(args);
}

int run(const Invocation& inv) {
  switch (inv.verb) {
    case Verb::none:
      return 1;
    case Verb::version:
      if (inv.json) {
        std::printf("{\"gym_cpp\":\"%s\",\"nemo_gym\":\"0.7.0\"}\n", GYM_VERSION);
      } else {
        std::printf("gym-cpp %s (NeMo Gym 0.7.0 compatible)\n", GYM_VERSION);
      }
      return 0;
    case Verb::serve:
      return run_serve();
    case Verb::env_start:
      check_model_flags(inv.config, true, "gym env start");
      return orchestrator::run_env_start(to_sources(inv.config), exporters::metrics_pipelines(),
                                         builtin_registry().catalog());
    case Verb::env_status:
      check_model_flags(inv.config, false, "gym env status");
      return orchestrator::run_env_status(to_sources(inv.config), inv.json);
    case Verb::env_init:
      return run_env_init(inv.init_name, inv.init_into);
    case Verb::config_show:
      return run_config_show(inv.config);
    case Verb::eval_run:
      check_model_flags(inv.config, !inv.no_serve,
                        inv.no_serve ? "gym eval run --no-serve" : "gym eval run");
      return run_eval(to_sources(inv.config), inv.no_serve, exporters::metrics_pipelines(),
                      inv.json);
    case Verb::eval_submit:
      check_model_flags(inv.config, true, "gym eval submit");
      return run_eval_submit(to_sources(inv.config), inv.submit);
    case Verb::demo: {
      DemoOptions options = inv.demo;
      options.config = inv.config;
      return run_demo(options);
    }
    case Verb::telemetry_report:
      return run_telemetry_report(inv.report_files, inv.json);
    case Verb::list:
      return run_list(inv.json, inv.config.search_dirs);
  }
  return 1;
}

int run_command_line(std::vector<std::string> args) {
  const Invocation inv = parse_command_line(std::move(args));
  if (inv.exit_code) return *inv.exit_code;
  core::init_logging(inv.verbose);
  try {
    return run(inv);
  } catch (const core::ConfigError& e) {
    print_error("", e);
    return 1;
  } catch (const std::exception& e) {
    print_error("error: ", e);
    return 2;
  }
}

}  // namespace gym::cli
