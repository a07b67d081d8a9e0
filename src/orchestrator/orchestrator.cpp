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
#include "orchestrator/placement.h"
#include "orchestrator/ports.h"
#include "orchestrator/probe.h"
#include "orchestrator/server_output.h"
#include "orchestrator/spawn.h"
#include "servers/head_server.h"
#include "telemetry/config.h"
#include "telemetry/memory_sampler.h"
#include "telemetry/shutdown_report.h"

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
  int exit_code = -1;  // once reaped
  int killed_by = 0;   // the signal that ended it, 0 for a normal exit
  LineSplitter lines;  // what it printed, cut into lines of bounded length
  OutputTail tail;     // its last lines, for an error message
  std::unique_ptr<std::ofstream> log;
};

// Whether a server's line is a warning or an error: the level word of our servers' log lines
// ("2025-01-01 12:00:00.000 warning ..."), or of Python's logging ("WARNING:root:...", uvicorn's
// "ERROR:    ...") among the first words.
bool is_warning_or_error(std::string_view line) {
  std::size_t pos = 0;
  for (int word = 0; word < 4 && pos < line.size(); ++word) {
    while (pos < line.size() && line[pos] == ' ') ++pos;
    const auto end = std::min(line.find(' ', pos), line.size());
    // "WARNING:root:..." is one word; its level is the part before the first ':'.
    std::string level(line.substr(pos, std::min(line.find(':', pos), end) - pos));
    for (auto& ch : level) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (level == "warning" || level == "warn" || level == "error" || level == "critical" ||
        level == "fatal")
      return true;
    if (level == "info" || level == "debug" || level == "trace") return false;
    pos = end + 1;
  }
  return false;
}

// Prints every child's output line by line, prefixed with its instance name, through the console
// (never on the progress bar's line). Quiet (`gym eval run -q`), and once the servers are being
// stopped, only their warnings and errors are printed: the rest goes to their logs and tails.
// One thread polls every pipe and reads at most one buffer from each ready one per round, so a
// server that floods its pipe delays the others by one buffer, never more; a line longer than
// kMaxLineBytes is relayed cut (LineSplitter), so no line costs more memory than that.
class OutputPump {
 public:
  explicit OutputPump(std::vector<Child>& children) : children_(children) {
    thread_ = std::thread([this] { loop(); });
  }
  ~OutputPump() { stop(); }
  // Relays what is already in the pipes (a server that keeps printing is read for at most
  // kStopDrain more), then the unfinished last lines, and ends the thread.
  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<std::string> tail(const Child& c) {
    std::lock_guard lock(mu_);
    return c.tail.lines();
  }
  // The servers are being stopped on purpose: their "received signal 15, shutting down" is no
  // news.
  void hush() { hushed_ = true; }

 private:
  static constexpr auto kStopDrain = std::chrono::seconds(2);

  void emit(Child& c, const OutputLine& output) {
    const std::string line = shown(output);
    std::lock_guard lock(mu_);
    // A server's account of its failed last export joins this process's one line.
    const auto report =
        hushed_ ? line.find(telemetry::shutdown_report::kLineStart) : std::string::npos;
    if (report != std::string::npos)
      telemetry::shutdown_report::hold_server(
          c.instance.name, line.substr(report + telemetry::shutdown_report::kLineStart.size()));
    else if (!(hushed_ || core::console::quiet()) || is_warning_or_error(line))
      core::console::write(stdout, "(" + c.instance.name + ") " + line);
    if (c.log) *c.log << line << '\n' << std::flush;
    c.tail.add(output);
  }

  void finish(Child& c) {
    if (auto last = c.lines.finish()) emit(c, *last);
  }

  void loop() {
    std::vector<char> buf(kMaxLineBytes);
    std::optional<Clock::time_point> drain_until;
    for (;;) {
      std::vector<pollfd> fds;
      std::vector<Child*> owners;
      for (auto& c : children_)
        if (c.process.output_fd >= 0) {
          fds.push_back({c.process.output_fd, POLLIN, 0});
          owners.push_back(&c);
        }
      if (fds.empty()) break;
      if (stopping_ && !drain_until) drain_until = Clock::now() + kStopDrain;
      if (drain_until && (Clock::now() > *drain_until || ::poll(fds.data(), fds.size(), 0) <= 0))
        break;
      if (!drain_until && ::poll(fds.data(), fds.size(), 100) <= 0) continue;
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        Child& c = *owners[i];
        auto n = ::read(c.process.output_fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          finish(c);
          ::close(c.process.output_fd);
          c.process.output_fd = -1;
          continue;
        }
        c.lines.feed({buf.data(), static_cast<std::size_t>(n)},
                     [&](OutputLine line) { emit(c, line); });
      }
    }
    // A pipe still open (a server's child holds it) may end in half a line: relay that too.
    for (auto& c : children_) finish(c);
  }

  std::vector<Child>& children_;
  std::thread thread_;
  std::mutex mu_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> hushed_{false};
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
    pump_ = std::make_unique<OutputPump>(children_);

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
        c.log = std::make_unique<std::ofstream>(log_dir + "/" + inst.name + ".log");
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
    const auto tail = c.tail.lines();
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
          const auto tail = pump_->tail(c);
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

  // Every `*base_url` of a model server block must answer before we go on
  // (docs/design/processes.md#readiness).
  // Then the preflight: a live model server's `<base_url>/models` must list its model, so a
  // wrong URL or model name stops here instead of failing every rollout.
  int probe_model_endpoints() {
    const double timeout_s =
        core::get_double(cfg_, "model_endpoint_readiness_timeout_seconds", 600, 0, 1e9);
    if (timeout_s == 0) return 0;
    const bool preflight = core::get_bool(cfg_, "model_endpoint_preflight", true);
    struct Endpoint {
      std::string key, url;
      std::optional<ModelEndpointCheck> check;
    };
    std::vector<Endpoint> endpoints;
    std::function<void(const json::value&, const std::string&)> walk =
        [&](const json::value& v, const std::string& path) {
          if (!v.is_object()) return;
          for (const auto& kv : v.get_object()) {
            std::string key = path + "." + std::string(kv.key());
            bool is_url_key = kv.key().ends_with("base_url");
            if (is_url_key && kv.value().is_string())
              endpoints.push_back({key, std::string(kv.value().get_string()), std::nullopt});
            if (is_url_key && kv.value().is_array())
              for (const auto& u : kv.value().get_array())
                if (u.is_string())
                  endpoints.push_back({key, std::string(u.get_string()), std::nullopt});
            walk(kv.value(), key);
          }
        };
    for (const auto& c : children_) {
      if (c.instance.server_type != "responses_api_models") continue;
      const std::string prefix =
          c.instance.name + "." + c.instance.server_type + "." + c.instance.impl;
      const auto first = endpoints.size();
      walk(c.instance.config, prefix);
      if (!preflight) continue;
      for (auto& check : model_endpoint_checks(cfg_, c.instance.impl, c.instance.config, prefix))
        for (auto i = first; i < endpoints.size(); ++i)
          if (!endpoints[i].check && endpoints[i].key == check.url_key &&
              endpoints[i].url == check.url) {
            endpoints[i].check = std::move(check);
            break;
          }
    }
    const auto started = Clock::now();
    const auto deadline = started + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(timeout_s));
    // vLLM loads for minutes: say so every 30 s (sooner with a short timeout).
    const auto report_every = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::clamp(timeout_s / 10, 3.0, 30.0)));
    for (const auto& e : endpoints) {
      const std::string shown = core::masked_url(e.url);  // a password in it stays home
      std::string url = e.check ? models_url(e.url) : e.url;
      while (url.ends_with("/")) url.pop_back();
      if (!e.check && url.ends_with("/v1")) url += "/models";
      std::string why;
      auto parsed = http::parse_url(url, why);
      if (!parsed) {
        std::fprintf(stderr, "error: %s = '%s' is not an http(s) URL\n", e.key.c_str(),
                     shown.c_str());
        return 2;
      }
      auto next_report = Clock::now() + report_every;
      ProbeResult r;
      for (bool reported = false;;) {
        if (int code = take_signal(std::chrono::milliseconds(0))) return code;
        // https: a completed TLS handshake counts; a certificate we would refuse stops here.
        const int port = std::atoi(parsed->port.c_str());
        const ProbeHeaders headers = e.check ? e.check->headers : ProbeHeaders{};
        if (!parsed->tls)
          r = http_get(parsed->host, port, parsed->target, std::chrono::seconds(5), headers);
        else if (e.check)
          r = https_get(parsed->host, port, parsed->target, std::chrono::seconds(10), headers);
        else
          r = tls_handshake(parsed->host, port, std::chrono::seconds(5));
        if (r.outcome == ProbeOutcome::success) break;
        if (parsed->tls && r.outcome == ProbeOutcome::unknown_error) {
          std::fprintf(stderr, "error: model endpoint %s = %s: %s\n", e.key.c_str(), shown.c_str(),
                       r.error.c_str());
          return 2;
        }
        if (r.error.rfind("cannot resolve", 0) == 0) {
          std::fprintf(stderr, "error: model endpoint %s = %s: %s\n", e.key.c_str(), shown.c_str(),
                       r.error.c_str());
          return 2;
        }
        const auto now = Clock::now();
        if (!reported) {
          spdlog::info("waiting for model endpoint {} ({}): {}", shown, e.key, r.error);
          reported = true;
        } else if (now >= next_report) {
          next_report = now + report_every;
          const auto elapsed =
              std::chrono::duration_cast<std::chrono::seconds>(now - started).count();
          spdlog::info(
              "still waiting for model endpoint {} ({}): {}:{:02} of "
              "model_endpoint_readiness_timeout_seconds={} s; last: {}",
              shown, e.key, elapsed / 60, elapsed % 60, timeout_s, r.error);
        }
        if (now > deadline) {
          std::fprintf(stderr,
                       "error: model endpoint %s = %s did not answer within "
                       "model_endpoint_readiness_timeout_seconds=%g\n",
                       e.key.c_str(), shown.c_str(), timeout_s);
          return 2;
        }
        if (int code = take_signal(std::chrono::milliseconds(3000))) return code;
      }
      if (!e.check) continue;
      const auto verdict = check_models_answer(*e.check, r.status, r.body);
      if (verdict.kind == PreflightVerdict::Kind::fail) {
        std::fprintf(stderr, "error: %s\n", verdict.message.c_str());
        return 2;
      }
      if (verdict.kind == PreflightVerdict::Kind::warn) spdlog::warn("{}", verdict.message);
    }
    return 0;
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
    const double grace = core::get_double(cfg_, "shutdown_grace_seconds", 8, 0, 3600);
    std::set<std::string> remote;
    for (const auto& c : children_)
      if (c.remote_node && c.exit_code < 0) remote.insert(c.instance.name);
    if (pump_) pump_->hush();
    const char* job = std::getenv("SLURM_JOB_ID");
    const auto stepped = terminate_steps(job ? job : "", remote, run_command);
    for (auto& c : children_) {
      if (c.exit_code >= 0 || stepped.count(c.instance.name)) continue;
      // A built-in server stops its own workers; an external server's children are told with it
      // (its process group), as they may not stop when it does.
      const bool group = c.external && ::getpgid(c.process.pid) == c.process.pid;
      ::kill(group ? -c.process.pid : c.process.pid, SIGTERM);
    }
    // This process's last export goes out while the servers make theirs (they were given the
    // rest of the bound in kShutdownBoundVariable).
    std::future<bool> last_export;
    if (telemetry_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::max(telemetry_end - Clock::now(), Clock::duration::zero()));
      try {
        last_export =
            std::async(std::launch::async, [this, left] { return telemetry_->shutdown(left); });
      } catch (const std::system_error&) {  // no thread to spare: the servers wait meanwhile
        telemetry_->shutdown(left);
      }
    }
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(grace));
    auto running = [&] {
      reap();
      return std::any_of(children_.begin(), children_.end(),
                         [](const Child& c) { return c.exit_code < 0; });
    };
    // What the servers left behind (their children once they exit, setsid daemons, double
    // forks) was adopted by us: it gets SIGTERM as it appears and the same grace period.
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
    if (last_export.valid()) last_export.wait();
    if (pump_) pump_->stop();
    if (report)
      if (auto line = telemetry::shutdown_report::end()) spdlog::warn("{}", *line);
    if (!children_.empty()) core::console::note("All %zu servers stopped\n", children_.size());
    head_.reset();
    for (auto& c : children_)
      if (!c.process.config_file.empty()) ::unlink(c.process.config_file.c_str());
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
