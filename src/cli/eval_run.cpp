// `gym eval run`: the composition of a deployment (or the one behind a head server) and a
// collection.
#include "cli/eval_run.h"

#include "cli/builtins.h"
#include "cli/deployment_watch.h"
#include "core/console.h"
#include "core/json_text.h"
#include "core/process_limits.h"
#include "core/termination_signals.h"
#include "core/yaml_json.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator/probe.h"
#include "rollouts/collection.h"
#include "rollouts/datasets.h"
#include "rollouts/options.h"
#include "rollouts/plan.h"

#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

namespace gym::cli {
namespace json = boost::json;
using rollouts::CollectionOptions;
using rollouts::OutputPaths;

namespace {

// The config of the deployment behind the head server (--no-serve).
json::object served_config(const json::object& local) {
  const auto addresses = core::DeploymentAddresses::from_config(local);
  const std::string& host = addresses.head_host;
  const int port = addresses.head_port;
  // The served config may be as large as a config file may be.
  auto r = orchestrator::http_get(host, port, "/global_config_dict_yaml", std::chrono::seconds(5),
                                  {}, core::kMaxYamlBytes);
  if (r.outcome != orchestrator::ProbeOutcome::success || r.status != 200)
    throw std::runtime_error("no running deployment answered at http://" + host + ":" +
                             std::to_string(port) + "/global_config_dict_yaml (" +
                             (r.error.empty() ? "HTTP " + std::to_string(r.status) : r.error) +
                             "); start one with `gym env start`, or set ++head_server.host/port");
  // The head server answers the YAML as a JSON string, as upstream does.
  boost::system::error_code ec;
  auto text = core::parse_json(r.body, ec);
  auto cfg =
      core::parse_yaml(!ec && text.is_string() ? std::string_view(text.get_string()) : r.body,
                       "the head server's config");
  if (!cfg.is_object()) throw std::runtime_error("the head server's config is not a mapping");
  return std::move(cfg.as_object());
}

std::vector<std::string> agent_names(const json::object& cfg) {
  std::vector<std::string> names;
  for (const auto& inst : core::find_server_instances(cfg))
    if (inst.server_type == "responses_api_agents") names.push_back(inst.name);
  return names;
}

std::map<std::string, std::string> agent_urls(const json::object& cfg) {
  std::map<std::string, std::string> urls;
  for (const auto& name : agent_names(cfg)) urls[name] = core::instance_url(cfg, name);
  return urls;
}

// The telemetry of a --no-serve collector (docs/design/telemetry-contract.md#settings): its own
// `telemetry:` block, else the served one without its Prometheus port (never adopted); its own run
// id, else the deployment's, so its data joins the run of the servers it talks to.
std::unique_ptr<telemetry::ProcessTelemetry> collector_telemetry(
    const json::object& local, const json::object& served,
    const telemetry::PipelineFactory& pipelines) {
  const auto getenv = telemetry::process_env();
  std::optional<std::string> served_run_id;
  json::object source = local;
  const auto* served_block = served.if_contains("telemetry");
  if (served_block && served_block->is_object()) {
    if (const auto* id = served_block->get_object().if_contains("run_id"); id && id->is_string())
      served_run_id = std::string(id->get_string());
    if (!local.contains("telemetry")) {
      json::object block = served_block->get_object();
      block.erase("run_id");  // adopted below, after the collector's own sources
      if (auto* prom = block.if_contains("prometheus"); prom && prom->is_object())
        prom->get_object().erase("port");
      source["telemetry"] = std::move(block);
    }
  }
  auto settings = telemetry::resolve_checked_settings(source, getenv, pipelines);
  auto run_id = telemetry::resolve_run_id(settings, getenv, served_run_id);
  return std::make_unique<telemetry::ProcessTelemetry>(
      pipelines, std::move(settings),
      telemetry::ProcessIdentity{"rollout_collection", "rollout_collection"}, std::move(run_id),
      telemetry::ProcessRole::collector, getenv);
}

// With --json stdout holds the summary alone: until restore(), file descriptor 1 is stderr, so
// whatever this process prints on stdout (the servers' output it pumps too) goes to stderr.
class StdoutToStderr {
 public:
  StdoutToStderr() {
    std::fflush(stdout);
    saved_ = ::dup(STDOUT_FILENO);
    if (saved_ >= 0) ::dup2(STDERR_FILENO, STDOUT_FILENO);
  }
  ~StdoutToStderr() { restore(); }
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stdout);
    ::dup2(saved_, STDOUT_FILENO);
    ::close(saved_);
    saved_ = -1;
  }

 private:
  int saved_ = -1;
};

// --no-serve: the collection against a deployment that runs elsewhere (its head server).
int collect_from_deployment(const json::object& local, const CollectionOptions& options,
                            const OutputPaths& paths, const telemetry::PipelineFactory& pipelines,
                            rollouts::CollectionReport& report) {
  json::object served;
  try {
    served = served_config(local);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    report.error = e.what();
    return 2;
  }
  auto telemetry = collector_telemetry(local, served, pipelines);  // before the pool
  auto plan = rollouts::plan_rows(options, paths, *options.input, agent_names(served));
  report.planned(plan);
  // The deployment's client keys (retry budget, pool limits) unless set here.
  json::object pool_cfg = served;
  core::deep_merge(pool_cfg, local);
  rollouts::prepare_output_files(plan, options, paths);  // the deployment answered
  // SIGINT/SIGTERM are taken by this thread, which supervises the collection, and so is a
  // deployment that went away.
  const core::TerminationSignals signals;
  const auto addresses = core::DeploymentAddresses::from_config(local);
  DeploymentWatch watch("http://" + addresses.head_host + ":" + std::to_string(addresses.head_port),
                        agent_urls(served), options.unreachable_seconds);
  return rollouts::run_collection(
      pool_cfg, agent_urls(served), std::move(plan), options, paths, *telemetry,
      [&](std::chrono::milliseconds wait) {
        if (int code = signals.take(wait)) return code;
        return watch.poll();
      },
      &report);
}

// The collection with its own deployment: the servers start here, and stop when it ends.
int collect_with_servers(const core::ConfigSources& sources, const json::object& local,
                         const core::ConfigOrigins& origins, const CollectionOptions& options,
                         const OutputPaths& paths, const telemetry::PipelineFactory& pipelines,
                         rollouts::CollectionReport& report) {
  core::validate_server_instances(local, builtin_registry().catalog(), sources.search_roots);
  auto deploy_sources = sources;
  // The deployment is this run's own: unless the user placed its head server, any free port, so
  // two runs on one machine never collide on the default 11000.
  if (origins.find("head_server.port").empty())
    deploy_sources.overrides.push_back("++head_server.port=0");
  std::filesystem::path input;
  if (options.input) {
    input = *options.input;
  } else {
    input = rollouts::collate_datasets(local, *options.split, paths.stem);
    // replay_model finds <dir>/<name>_rollouts.jsonl beside the collection's input.
    deploy_sources.overrides.push_back("++input_jsonl_fpath=" + input.string());
  }
  auto plan = rollouts::plan_rows(options, paths, input, agent_names(local));
  report.planned(plan);
  if (options.quiet) {
    // -q: the servers' output goes to files (nemo_gym_log_dir), their warnings still show.
    std::string dir = core::get_string(local, "nemo_gym_log_dir", "");
    if (dir.empty()) {
      dir = paths.stem.string() + "_logs";
      deploy_sources.overrides.push_back("++nemo_gym_log_dir=" + dir);
    }
    report.server_logs = dir;
    core::console::print("Server output: " + dir + "/<server>.log");
  }
  orchestrator::Deployment deployment(deploy_sources, pipelines, builtin_registry().catalog());
  int code = deployment.start();
  if (code == 2) report.error = "the deployment did not start (the reason is on stderr)";
  if (code == 130 || code == 143)
    report.stop_reason = code == 130 ? "interrupted (SIGINT)" : "terminated (SIGTERM)";
  if (code == 0) {
    rollouts::prepare_output_files(plan, options, paths);  // every server is ready
    // Collection runs inside the orchestrator process and reports as `orchestrator`.
    code = rollouts::run_collection(
        deployment.config(), agent_urls(deployment.config()), std::move(plan), options, paths,
        *deployment.telemetry(),
        [&](std::chrono::milliseconds wait) { return deployment.poll(wait); }, &report);
  }
  deployment.shutdown();
  return code;
}

// The run itself; `report` and `paths_out` are filled as far as it got.
int collect(const core::ConfigSources& sources, bool no_serve,
            const telemetry::PipelineFactory& pipelines, rollouts::CollectionReport& report,
            std::optional<OutputPaths>& paths_out) {
  core::raise_fd_limit();
  core::ConfigOrigins origins;
  json::object local = core::load_config(sources, &origins);
  auto options = CollectionOptions::from_config(local, no_serve);
  auto paths = OutputPaths::for_output(options.output);
  paths_out = paths;
  if (options.quiet) {
    core::console::set_quiet(true);
    if (spdlog::get_level() == spdlog::level::info) spdlog::set_level(spdlog::level::warn);
  }
  std::error_code ec;
  if (paths.rollouts.has_parent_path())
    std::filesystem::create_directories(paths.rollouts.parent_path(), ec);
  if (ec)
    throw core::ConfigError("output_jsonl_fpath: cannot create the directory " +
                            paths.rollouts.parent_path().string() + ": " + ec.message());
  if (no_serve) return collect_from_deployment(local, options, paths, pipelines, report);
  return collect_with_servers(sources, local, origins, options, paths, pipelines, report);
}

}  // namespace

int run_eval(const core::ConfigSources& sources, bool no_serve,
             const telemetry::PipelineFactory& pipelines, bool json_summary) {
  rollouts::CollectionReport report;
  std::optional<OutputPaths> paths;
  if (!json_summary) return collect(sources, no_serve, pipelines, report, paths);
  StdoutToStderr redirect;
  // The summary is the last line on stdout whatever happened; an error is still reported on
  // stderr by the caller.
  auto summarize = [&](int code) {
    redirect.restore();
    auto summary = rollouts::report_json(report, paths.value_or(OutputPaths{}), code);
    if (!paths) summary["files"] = nullptr;
    std::printf("%s\n", core::render_json(summary).c_str());
    std::fflush(stdout);
  };
  int code = 0;
  try {
    code = collect(sources, no_serve, pipelines, report, paths);
  } catch (const core::ConfigError& e) {
    report.error = e.what();
    summarize(1);
    throw;
  } catch (const std::exception& e) {
    report.error = e.what();
    summarize(2);
    throw;
  }
  summarize(code);
  return code;
}

}  // namespace gym::cli
