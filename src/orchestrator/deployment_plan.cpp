#include "orchestrator/deployment_plan.h"

#include "http/session_cookie.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <set>

namespace gym::orchestrator {
namespace json = boost::json;

namespace {

// The variables every server gets: the run id (each server resolves the rest of its telemetry
// from the merged config, so a user's NEMO_LENS_* still wins there:
// docs/design/telemetry-contract.md#settings), the part of the shutdown bound left to the servers,
// and one secret per deployment that signs every server's session cookies (not in the config, so
// the head server never shows it).
std::vector<std::string> server_environment(const telemetry::TelemetrySettings& settings,
                                            const std::string& run_id) {
  std::vector<std::string> env;
  for (const auto& [key, value] : telemetry::child_environment(settings, run_id))
    env.push_back(key + "=" + value);
  env.push_back(std::string(telemetry::kShutdownBoundVariable) + "=" +
                std::to_string((telemetry::kShutdownBound - telemetry::kSignalFlushBound).count()));
  env.push_back(std::string(http::kSessionKeyVariable) + "=" + http::new_session_key());
  return env;
}

}  // namespace

DeploymentPlan plan_deployment(const core::ConfigSources& sources,
                               const core::ImplCatalog& implementations,
                               const telemetry::PipelineFactory& pipelines,
                               const telemetry::GetEnv& getenv) {
  DeploymentPlan plan;
  core::ConfigOrigins origins;
  json::object& cfg = plan.config;
  cfg = core::load_config(sources, &origins);
  core::validate_server_instances(cfg, implementations, sources.search_roots, &origins);
  auto instances = core::find_server_instances(cfg, &origins);
  if (instances.empty())
    throw core::ConfigError(
        "no server instance is configured: add one with --config FILE or a selector such as "
        "--resources-server example_single_tool_call");
  // use_absolute_ip: servers listen on the address of their node, spread over a Slurm
  // allocation's nodes when there is one.
  if (core::get_bool(cfg, "use_absolute_ip", false)) {
    plan.placement = place_servers(instances, allocation_nodes(std::getenv, run_command));
    apply_placement_hosts(cfg, instances, plan.placement);
    instances = core::find_server_instances(cfg);
  }
  std::set<std::string> remote;
  for (const auto& inst : instances)
    if (plan.placement.remote(inst.name)) remote.insert(inst.name);
  for (const auto& warning : check_listen_hosts(cfg, instances)) spdlog::warn("{}", warning);
  // Invalid telemetry values stop us here, before anything starts (ConfigError).
  plan.telemetry = telemetry::resolve_checked_settings(cfg, getenv, pipelines);
  const bool prometheus = plan.telemetry.metrics_active() && plan.telemetry.prometheus_port;
  // Random server ports avoid the Prometheus ports (docs/design/processes.md#start-up).
  assign_ports(cfg, instances,
               prometheus ? prometheus_ports(instances, *plan.telemetry.prometheus_port)
                          : std::set<std::int64_t>{},
               &plan.port_holds, remote);
  instances = core::find_server_instances(cfg);
  plan.run_id = telemetry::resolve_run_id(plan.telemetry, getenv);
  plan.child_env = server_environment(plan.telemetry, plan.run_id);
  if (plan.telemetry.active()) {
    // A --no-serve collector reading the served config joins this run.
    auto* block = cfg.if_contains("telemetry");
    if (!block || !block->is_object()) block = &(cfg["telemetry"] = json::object());
    block->as_object()["run_id"] = plan.run_id;
    if (prometheus) assign_prometheus_ports(cfg, instances, *plan.telemetry.prometheus_port);
  }
  plan.instances = core::find_server_instances(cfg);
  return plan;
}

}  // namespace gym::orchestrator
