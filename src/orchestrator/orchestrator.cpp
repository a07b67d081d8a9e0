#include "orchestrator/orchestrator.h"

#include "core/console.h"
#include "core/json_text.h"
#include "core/process_limits.h"
#include "core/secrets.h"
#include "core/termination_signals.h"
#include "core/yaml_json.h"
#include "http/server.h"
#include "http/session_cookie.h"
#include "http/url.h"
#include "orchestrator/deployment_plan.h"
#include "orchestrator/descendants.h"
#include "orchestrator/model_preflight.h"
#include "orchestrator/model_readiness.h"
#include "orchestrator/output_pump.h"
#include "orchestrator/placement.h"
#include "orchestrator/ports.h"
#include "orchestrator/probe.h"
#include "orchestrator/server_output.h"
#include "orchestrator/spawn.h"
#include "servers/head_server.h"
#include "telemetry/common/shutdown_report.h"
#include "telemetry/config.h"
#include "telemetry/metrics/memory_sampler.h"

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string_view>
#include <thread>

namespace gym::orchestrator {
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kStdoutClosedExitCode = 141;  // 128 + SIGPIPE, as a shell reports a broken pipe

// One spawned server root and what it printed.
struct Child {
  core::ServerInstance instance;
  std::string host;
  int port = 0;
  std::optional<ExternalCommand> external;  // not built in, started from its folder
  std::optional<Node> remote_node;          // issue 16: started there through srun
  SpawnedServer process;
  bool ready = false;
  int exit_code = -1;   // once reaped
  int killed_by = 0;    // the signal that ended it, 0 for a normal exit
  ServerOutput output;  // what it prints, relayed by the pump
};

// The head server on its own loop and thread.
class HeadServer {
 public:
  HeadServer(const std::string& host, int port, std::function<std::string()> yaml,
             std::function<json::array()> instances) {
    http::Router router;
    servers::add_head_routes(router, std::move(yaml), std::move(instances));
    http::ServerOptions opt;
    opt.host = host;
    opt.port = static_cast<std::uint16_t>(port);
    server_ = std::make_unique<http::HttpServer>(std::move(router), opt);
    server_->start(io_);  // binds now: a busy head port fails here, before any spawn
    thread_ = std::thread([this] { io_.run(); });
  }
  int port() const { return server_->port(); }
  ~HeadServer() {
    server_->stop();
    thread_.join();
    server_.reset();
  }

 private:
  boost::asio::io_context io_{1};
  std::unique_ptr<http::HttpServer> server_;
  std::thread thread_;
};

}  // namespace

class Deployment::Impl {
 public:
  Impl(const core::ConfigSources& sources, telemetry::PipelineFactory pipelines,
       core::ImplCatalog implementations)
      : sources_(sources),
        pipelines_(std::move(pipelines)),
        implementations_(std::move(implementations)) {}
  ~Impl() { shutdown(); }

  int start() {
    // Signals are taken synchronously by this thread; every thread started later inherits
    // the mask, and spawned servers restore theirs.
    signals_.emplace(core::TerminationSignals::Children::wake);
    // What a server leaves behind when its parent exits comes to us, to be stopped at shutdown.
    if (!become_subreaper())
      spdlog::warn(
          "cannot become a child subreaper ({}): processes the servers start may "
          "outlive the deployment",
          std::strerror(errno));
    core::raise_fd_limit();
    start_time_ =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();

    const auto getenv = telemetry::process_env();
    DeploymentPlan plan = plan_deployment(sources_, implementations_, pipelines_, getenv);
    cfg_ = std::move(plan.config);
    // Before any server starts: a Prometheus port that cannot be bound fails here (exit 2).
    telemetry_ = std::make_unique<telemetry::ProcessTelemetry>(
        pipelines_, plan.telemetry, telemetry::ProcessIdentity{"orchestrator", "orchestrator"},
        plan.run_id, telemetry::ProcessRole::orchestrator, getenv);
    if (!start_head_server()) return 2;
    create_children(plan.instances, plan.placement);
    spawn_children(plan.child_env);
    // gym.servers.active: the servers spawned, set right after the last spawn.
    telemetry_->metrics().set_servers_active(static_cast<std::int64_t>(children_.size()));
    std::vector<ServerOutput*> outputs;
    for (auto& c : children_) outputs.push_back(&c.output);
    pump_ = std::make_unique<OutputPump>(std::move(outputs));

    int code = wait_ready();
    plan.port_holds.clear();
    if (code == 0) code = probe_model_endpoints();
    if (code == 0) start_memory_sampler();
    if (code == 0) {
      core::console::note("All %zu / %zu servers ready!\n%s", children_.size(), children_.size(),
                          table().c_str());
    }
    return code;
  }

  // The head server, on the configured port or (0) one the OS chooses, which every server and
  // client is then told. False when it cannot listen, said on stderr.
  bool start_head_server() {
    auto addresses = core::DeploymentAddresses::from_config(cfg_);
    try {
      // It shows the config with its secrets masked (servers get theirs from the environment).
      head_ = std::make_unique<HeadServer>(
          addresses.head_host, addresses.head_port,
          [this] {
            std::lock_guard lock(head_yaml_mu_);
            return head_yaml_;
          },
          [this] { return server_instances(); });
    } catch (const std::exception& e) {
      // Usually a running `gym env start` (or an earlier one) holds the port.
      std::fprintf(stderr,
                   "error: head server: %s\nStop what listens there (with a deployment already "
                   "running, collect against it with `gym eval run --no-serve`), or choose "
                   "another port: ++head_server.port=%u\n",
                   e.what(), static_cast<unsigned>(free_port(addresses.head_host)));
      return false;
    }
    // head_server.port: 0 lets the OS choose; every server and client is told the port it chose.
    if (addresses.head_port == 0) {
      addresses.head_port = head_->port();
      cfg_["head_server"].as_object()["port"] = addresses.head_port;
    }
    {
      std::lock_guard lock(head_yaml_mu_);
      head_yaml_ = core::to_yaml(core::masked_secrets(cfg_));
    }
    core::console::note("Head server at http://%s:%d\n", addresses.head_host.c_str(),
                        addresses.head_port);
    return true;
  }

  // A Child for every server instance: where it listens and runs, its command when it is
  // external, its log file with nemo_gym_log_dir.
  void create_children(const std::vector<core::ServerInstance>& instances,
                       const Placement& placement) {
    const std::string log_dir = core::get_string(cfg_, "nemo_gym_log_dir", "");
    children_.reserve(instances.size());
    for (const auto& inst : instances) {
      Child c;
      c.instance = inst;
      c.output.name = inst.name;
      c.host = std::string(inst.config.at("host").as_string());
      c.port = static_cast<int>(core::get_int(inst.config, "port", 0, 0, 65535));
      if (!core::is_builtin(inst, implementations_)) {
        // validate_server_instances found the folder; look again the same way.
        auto folder = core::find_server_folder(inst, sources_.search_roots);
        if (!folder)
          throw core::ConfigError("the folder of external server " + inst.name + " went away");
        c.external =
            external_command(folder->string(), core::get_string(inst.config, "entrypoint", ""));
      }
      if (placement.remote(inst.name)) c.remote_node = placement.node(inst.name);
      if (!log_dir.empty()) {
        std::filesystem::create_directories(log_dir);
        c.output.log = std::make_unique<std::ofstream>(log_dir + "/" + inst.name + ".log");
      }
      children_.push_back(std::move(c));
    }
  }

  // Starts every server with the merged config and `child_env`.
  void spawn_children(const std::vector<std::string>& child_env) {
    const std::string yaml = core::to_yaml(cfg_);
    for (auto& c : children_) {
      // On another node: through srun; a built-in server reads a large config from the (shared)
      // working directory, and samples its own memory where this process cannot.
      const auto launcher = c.remote_node ? srun_command(*c.remote_node, c.instance.name)
                                          : std::vector<std::string>{};
      auto env = child_env;
      if (c.remote_node) env.push_back(std::string(telemetry::kSampleOwnMemoryVariable) + "=1");
      c.process =
          c.external
              ? spawn_external_server(c.instance.name, *c.external, yaml, child_env, true, launcher)
              : spawn_server(c.instance.name, yaml, env, true, launcher,
                             c.remote_node ? std::filesystem::current_path().string() : "/tmp");
      c.output.fd = std::exchange(c.process.output_fd, -1);  // the pump reads and closes it
    }
  }

  const json::object& config() const { return cfg_; }
  telemetry::ProcessTelemetry* telemetry() { return telemetry_.get(); }

  int poll(std::chrono::milliseconds wait) {
    if (int code = take_signal(wait)) return code;
    if (std::ferror(stdout)) {  // `gym env start | head` after head exited
      std::fputs("stdout was closed (e.g. `| head` exited); stopping the servers\n", stderr);
      return kStdoutClosedExitCode;
    }
    if (const Child* c = exited()) {
      report_exit(*c, "unexpectedly");
      return 2;
    }
    adopted_children(running_servers());  // reaps the adopted processes that exited
    return 0;
  }

  // The servers not reaped yet: our own children, never taken for adopted ones.
  std::set<pid_t> running_servers() const {
    std::set<pid_t> pids;
    for (const auto& c : children_)
      if (c.exit_code < 0) pids.insert(c.process.pid);
    return pids;
  }

  json::array server_instances() const {
    json::array out;
    for (const auto& c : children_) {
      json::object o;
      o["config_path"] = c.instance.name;
      o["dir_path"] = c.external ? json::value(c.external->folder) : json::value(nullptr);
      auto* ep = c.instance.config.if_contains("entrypoint");
      o["entrypoint"] = ep ? *ep : json::value(nullptr);
      o["host"] = c.host;
      o["name"] = c.instance.impl;
      o["pid"] = c.process.pid;
      o["port"] = c.port;
      if (auto* ports = c.instance.config.if_contains("prometheus_ports"))
        o["prometheus_ports"] = *ports;
      o["process_name"] = c.instance.name;
      o["server_type"] = c.instance.server_type;
      o["start_time"] = start_time_;
      o["status"] = nullptr;
      o["uptime_seconds"] = nullptr;
      o["url"] = "http://" + c.host + ":" + std::to_string(c.port);
      out.push_back(std::move(o));
    }
    return out;
  }

  // The exit code of a pending SIGINT/SIGTERM (130, 143), or 0. Reaps exited children (a
  // SIGCHLD ends the wait early).
  int take_signal(std::chrono::milliseconds wait) {
    int code = signals_ ? signals_->take(wait) : 0;
    reap();
    return code;
  }

  void reap() {
    for (auto& c : children_)
      if (c.exit_code < 0) c.exit_code = poll_exit(c.process.pid, &c.killed_by);
  }

  const Child* exited() const {
    for (const auto& c : children_)
      if (c.exit_code >= 0) return &c;
    return nullptr;
  }

  void report_exit(const Child& c, const char* when) {
    pump_->stop();                   // drain what it printed last
    const core::console::Hold hold;  // the collection's bar may be shown
    const std::string external = c.external ? " (" + c.external->argv.at(0) + " " +
                                                  c.external->argv.at(1) + " in " +
                                                  c.external->folder + ")"
                                            : "";
    const std::string where =
        c.remote_node ? " on node " + c.remote_node->name + " (its srun step)" : "";
    std::fprintf(stderr, "error: server %s%s%s exited %s%s%s; its last output:\n",
                 c.instance.name.c_str(), external.c_str(), where.c_str(), when,
                 c.killed_by ? ", " : " ", exit_description(c.exit_code, c.killed_by).c_str());
    const auto tail = c.output.tail.lines();
    for (const auto& line : tail) std::fprintf(stderr, "  %s\n", line.c_str());
    if (c.external) {
      const char* path = std::getenv("PATH");
      const std::string hint =
          missing_module_hint(*c.external, tail, path ? path : "/usr/bin:/bin");
      std::fputs(hint.c_str(), stderr);
    }
  }

  int wait_ready() {
    const double timeout_s =
        core::get_double(cfg_, "server_readiness_timeout_seconds", 300, 0, 1e9);
    const auto start = Clock::now();
    auto last_report = start;
    for (;;) {
      if (int code = take_signal(std::chrono::milliseconds(0))) return code;
      if (const Child* c = exited()) {
        report_exit(*c, "during start-up");
        return 2;
      }
      bool all = true;
      for (auto& c : children_) {
        if (c.ready) continue;
        auto r = http_get(c.host, c.port, "/", std::chrono::seconds(5));
        c.ready = r.outcome == ProbeOutcome::success;  // any HTTP answer
        all = all && c.ready;
      }
      if (all) return 0;
      auto now = Clock::now();
      if (timeout_s > 0 && now - start > std::chrono::duration<double>(timeout_s)) {
        std::fprintf(stderr, "error: servers not ready after server_readiness_timeout_seconds=%g:",
                     timeout_s);
        for (const auto& c : children_)
          if (!c.ready) std::fprintf(stderr, " %s", c.instance.name.c_str());
        std::fprintf(stderr, "\n");
        // A server that hangs, or listens elsewhere than the port its config gives it.
        for (const auto& c : children_) {
          if (c.ready) continue;
          std::fprintf(stderr, "%s (pid %d) is running but does not answer GET / on http://%s:%d",
                       c.instance.name.c_str(), c.process.pid, c.host.c_str(), c.port);
          const auto tail = pump_->tail(c.output);
          std::fprintf(stderr, tail.empty() ? "; it printed nothing\n" : "; its last output:\n");
          for (const auto& line : tail) std::fprintf(stderr, "  %s\n", line.c_str());
        }
        return 2;
      }
      if (now - last_report > std::chrono::seconds(30)) {
        last_report = now;
        std::string waiting;
        for (const auto& c : children_)
          if (!c.ready) waiting += " " + c.instance.name;
        spdlog::info("still starting:{}", waiting);
      }
      if (int code = take_signal(std::chrono::milliseconds(200))) return code;
    }
  }

  // Every model endpoint must answer, and pass its preflight, before we go on
  // (orchestrator/model_readiness.h).
  int probe_model_endpoints() {
    std::vector<core::ServerInstance> instances;
    for (const auto& c : children_) instances.push_back(c.instance);
    return wait_for_model_endpoints(
        cfg_, instances, [this](std::chrono::milliseconds wait) { return take_signal(wait); });
  }

  std::string table() const {
    std::string text;
    for (const auto& c : children_) {
      char line[512];
      std::snprintf(line, sizeof line, "  %-45s %s/%s  http://%s:%d  pid %d",
                    c.instance.name.c_str(), c.instance.server_type.c_str(),
                    c.instance.impl.c_str(), c.host.c_str(), c.port, c.process.pid);
      text += line;
      if (c.external)
        text += "  (" + c.external->argv.at(0) + " " + c.external->argv.at(1) + " in " +
                c.external->folder + ")";
      if (c.remote_node) text += "  on node " + c.remote_node->name + " (srun)";
      text += "\n";
    }
    return text;
  }

  // The memory sampler: once every server passed readiness, when metrics and memory profiling are
  // on.
  void start_memory_sampler() {
    const auto& settings = telemetry_->settings();
    if (!telemetry_->metrics_active() || !settings.memory_profiling_enabled) return;
    if (!telemetry::MemorySampler::available()) {
      spdlog::info("memory profiling is unavailable here: no /proc/self");
      return;
    }
    std::vector<telemetry::MemoryTarget> targets;
    for (const auto& c : children_)
      if (!c.remote_node)  // those sample themselves (kSampleOwnMemoryVariable)
        targets.push_back(
            {c.instance.name, c.instance.server_type, static_cast<long>(c.process.pid)});
    sampler_ = std::make_unique<telemetry::MemorySampler>(
        std::move(targets),
        std::chrono::duration<double>(settings.memory_profiling_interval_seconds));
    telemetry_->metrics().observe_memory([sampler = sampler_.get()] { return sampler->latest(); });
    sampler_->start();
  }

  // SIGTERM every root, wait the grace period, SIGKILL the rest's groups. The telemetry of the
  // whole deployment is flushed within one bound (kShutdownBound): a collector that does not
  // answer costs 5 s, not one bound per process in turn.
  void shutdown() {
    if (shut_down_) return;
    shut_down_ = true;
    const auto telemetry_end = Clock::now() + telemetry::kShutdownBound;
    // What this process and its servers could not export is said once, after they stopped.
    const bool report = telemetry::shutdown_report::begin();
    if (sampler_) sampler_->stop();  // its final sample is recorded
    if (telemetry_) {
      // gym.servers.active reads 0 and is exported before any server is signalled; a collector
      // that has not taken it within kSignalFlushBound is not waited for longer.
      telemetry_->metrics().set_servers_active(0);
      telemetry_->force_flush(telemetry::kSignalFlushBound);
    }
    if (pump_) pump_->hush();
    signal_servers();
    std::future<bool> last_export = start_last_export(telemetry_end);
    stop_servers(core::get_double(cfg_, "shutdown_grace_seconds", 8, 0, 3600));
    if (last_export.valid()) last_export.wait();
    if (pump_) pump_->stop();
    if (report)
      if (auto line = telemetry::shutdown_report::end()) spdlog::warn("{}", *line);
    if (!children_.empty()) core::console::note("All %zu servers stopped\n", children_.size());
    head_.reset();
    for (auto& c : children_)
      if (!c.process.config_file.empty()) ::unlink(c.process.config_file.c_str());
  }

  // SIGTERM to every server still running: a remote one through Slurm (its step), so that it
  // stops in order as a local one does; an external server with its process group.
  void signal_servers() {
    std::set<std::string> remote;
    for (const auto& c : children_)
      if (c.remote_node && c.exit_code < 0) remote.insert(c.instance.name);
    const char* job = std::getenv("SLURM_JOB_ID");
    const auto stepped = terminate_steps(job ? job : "", remote, run_command);
    for (auto& c : children_) {
      if (c.exit_code >= 0 || stepped.count(c.instance.name)) continue;
      // A built-in server stops its own workers; an external server's children are told with it
      // (its process group), as they may not stop when it does.
      const bool group = c.external && ::getpgid(c.process.pid) == c.process.pid;
      ::kill(group ? -c.process.pid : c.process.pid, SIGTERM);
    }
  }

  // This process's last export, made while the servers make theirs (they were given the rest of
  // the bound in kShutdownBoundVariable); none without telemetry.
  std::future<bool> start_last_export(Clock::time_point telemetry_end) {
    if (!telemetry_) return {};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::max(telemetry_end - Clock::now(), Clock::duration::zero()));
    try {
      return std::async(std::launch::async, [this, left] { return telemetry_->shutdown(left); });
    } catch (const std::system_error&) {  // no thread to spare: the servers wait meanwhile
      telemetry_->shutdown(left);
      return {};
    }
  }

  // Waits up to `grace` seconds for the signalled servers to exit, then SIGKILLs the process
  // groups of the rest. What the servers left behind (their children once they exit, setsid
  // daemons, double forks) was adopted by us: it gets SIGTERM as it appears, the same grace
  // period, then SIGKILL.
  void stop_servers(double grace) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(grace));
    auto running = [&] {
      reap();
      return std::any_of(children_.begin(), children_.end(),
                         [](const Child& c) { return c.exit_code < 0; });
    };
    Orphans orphans;
    auto settled = [&] {
      const bool servers = running();
      return orphans.terminate(running_servers()) == 0 && !servers;
    };
    while (!settled() && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (auto& c : children_) {
      if (c.exit_code >= 0) continue;
      spdlog::warn("{} did not stop within {} s; killing it", c.instance.name, grace);
      ::kill(-c.process.pid, SIGKILL);
    }
    const auto kill_deadline = Clock::now() + std::chrono::seconds(2);
    for (;;) {
      const bool servers = running();
      if ((orphans.kill(running_servers()) == 0 && !servers) || Clock::now() >= kill_deadline)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (orphans.signalled())
      spdlog::info("stopped {} processes the servers had left running", orphans.signalled());
    if (!orphans.left().empty()) {
      std::string pids;
      for (pid_t pid : orphans.left()) pids += " " + std::to_string(pid);
      spdlog::warn(
          "processes the servers started did not die of SIGKILL within 2 s (stuck in "
          "the kernel?), pids:{}",
          pids);
    }
  }

  core::ConfigSources sources_;
  telemetry::PipelineFactory pipelines_;
  core::ImplCatalog implementations_;
  // Declared before telemetry_: the final export at its destruction reads the sampler.
  std::unique_ptr<telemetry::MemorySampler> sampler_;  // with memory profiling only
  std::unique_ptr<telemetry::ProcessTelemetry> telemetry_;
  json::object cfg_;
  std::optional<core::TerminationSignals> signals_;  // from start() on
  double start_time_ = 0;
  std::vector<Child> children_;
  std::unique_ptr<OutputPump> pump_;
  std::mutex head_yaml_mu_;
  std::string head_yaml_;  // what the head server serves (secrets masked)
  std::unique_ptr<HeadServer> head_;
  bool shut_down_ = false;
};

Deployment::Deployment(const core::ConfigSources& sources, telemetry::PipelineFactory pipelines,
                       core::ImplCatalog implementations)
    : impl_(std::make_unique<Impl>(sources, std::move(pipelines), std::move(implementations))) {}
Deployment::~Deployment() = default;
int Deployment::start() { return impl_->start(); }
const json::object& Deployment::config() const { return impl_->config(); }
int Deployment::poll(std::chrono::milliseconds wait) { return impl_->poll(wait); }
void Deployment::shutdown() { impl_->shutdown(); }
telemetry::ProcessTelemetry* Deployment::telemetry() { return impl_->telemetry(); }

int run_env_start(const core::ConfigSources& sources, const telemetry::PipelineFactory& pipelines,
                  const core::ImplCatalog& implementations) {
  Deployment deployment(sources, pipelines, implementations);
  int code = deployment.start();
  while (code == 0) code = deployment.poll(std::chrono::milliseconds(1000));
  deployment.shutdown();
  return code;
}

}  // namespace gym::orchestrator
