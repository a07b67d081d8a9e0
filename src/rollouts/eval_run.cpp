#include "rollouts/eval_run.h"

#include "core/json_text.h"
#include "core/process_limits.h"
#include "core/yaml_json.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator/probe.h"
#include "http/pool_metrics.h"
#include "rollouts/aggregate.h"
#include "rollouts/collector.h"
#include "rollouts/datasets.h"
#include "rollouts/progress.h"
#include "rollouts/resume.h"
#include "rollouts/rows.h"
#include "servers/registry.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <set>
#include <thread>

namespace gym::rollouts {
namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// The config of the deployment behind the head server (runtime.md 9.4, --no-serve).
json::object served_config(const json::object& local) {
  const std::string host = core::get_string(local, "head_server.host", "127.0.0.1");
  const int port = static_cast<int>(core::get_int(local, "head_server.port", 11000, 1, 65535));
  auto r = orchestrator::http_get(host, port, "/global_config_dict_yaml", std::chrono::seconds(5));
  if (r.outcome != orchestrator::ProbeOutcome::success || r.status != 200)
    throw std::runtime_error("no running deployment answered at http://" + host + ":" +
                             std::to_string(port) + "/global_config_dict_yaml (" +
                             (r.error.empty() ? "HTTP " + std::to_string(r.status) : r.error) +
                             "); start one with `gym env start`, or set ++head_server.host/port");
  // The head server answers the YAML as a JSON string, as upstream does.
  boost::system::error_code ec;
  auto text = core::parse_json(r.body, ec);
  auto cfg = core::parse_yaml(!ec && text.is_string() ? std::string_view(text.get_string()) : r.body,
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
  for (const auto& name : agent_names(cfg)) urls[name] = servers::instance_url(cfg, name);
  return urls;
}

// SIGINT/SIGTERM are taken synchronously by the thread that supervises the collection.
void block_termination_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int take_termination_signal(std::chrono::milliseconds wait) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  timespec ts{static_cast<time_t>(wait.count() / 1000), static_cast<long>(wait.count() % 1000) * 1'000'000};
  int sig = ::sigtimedwait(&set, nullptr, &ts);
  return sig == SIGINT ? 130 : sig == SIGTERM ? 143 : 0;
}

// What the collection produced; read by the supervising thread after `finished`.
struct Outcome {
  CollectionCounts counts;
  std::size_t total = 0;
  bool aggregate_failed = false;
  std::optional<std::filesystem::path> aggregate_path;
  std::string error;  // a failure of the collector itself (e.g. a write error)
};

// The collection on its own event loop and thread; the caller supervises signals and servers.
class CollectionThread {
 public:
  CollectionThread(json::object pool_cfg, std::map<std::string, std::string> urls,
                   std::vector<json::object> rows, std::vector<json::object> done,
                   const CollectionOptions& options, const OutputPaths& paths,
                   telemetry::GymMetrics& metrics)
      : pool_cfg_(std::move(pool_cfg)), urls_(std::move(urls)), rows_(std::move(rows)),
        done_(std::move(done)), options_(options), paths_(paths), metrics_(metrics) {
    thread_ = std::thread([this] { run(); });
  }
  ~CollectionThread() {
    if (thread_.joinable()) thread_.join();
  }

  bool finished() const { return finished_; }
  // Stops the loop: in-flight rollouts are abandoned, written rows stay (--resume redoes the
  // rest). The loop and what lives on it are left to the exiting process: destroying coroutines
  // that hold pooled connections after the loop stopped is not worth the risk at exit.
  void cancel() {
    asio::post(*io_, [this] {
      if (collector_) collector_->stop();
      io_->stop();
    });
    thread_.join();
    (void)collector_.release();
    (void)client_.release();
    (void)pool_metrics_.release();
    (void)io_.release();
  }
  Outcome& outcome() { return outcome_; }

 private:
  void run() {
    auto pool = http::PoolParams::from_config(pool_cfg_, 1);
    if (metrics_.enabled()) pool_metrics_ = std::make_unique<http::PoolMetrics>(metrics_);
    client_ = std::make_unique<http::HttpClient>(io_->get_executor(), pool, pool_metrics_.get());
    pool.log_capacity_report();
    asio::co_spawn(*io_, collect(), [this](std::exception_ptr e) {
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          outcome_.error = ex.what();
        }
      }
      io_->stop();
    });
    io_->run();
    finished_ = true;
  }

  asio::awaitable<void> collect() {
    outcome_.total = rows_.size();
    Progress progress(rows_);
    collector_ = std::make_unique<Collector>(*client_, urls_, paths_, options_.route_failures_to_sidecar);
    co_await collector_->run(std::move(rows_), options_.concurrency, progress);
    progress.finish();
    outcome_.counts = collector_->counts();
    std::puts("Sorting results to ensure consistent ordering");
    auto& successes = collector_->successes();
    for (auto& row : done_) successes.push_back(std::move(row));
    if (options_.disable_aggregation) {
      std::puts("Skipping aggregate-metrics computation because disable_aggregation=True.");
    } else if (!successes.empty()) {
      std::puts("Computing aggregate metrics");
      std::fflush(stdout);
      try {
        auto entries = co_await fetch_aggregate_metrics(*client_, urls_, std::move(successes));
        write_aggregate_metrics(paths_.aggregate_metrics, entries);
        outcome_.aggregate_path = paths_.aggregate_metrics;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "error: aggregate metrics: %s\n", e.what());
        outcome_.aggregate_failed = true;
      }
    }
    collector_.reset();  // closes the files
  }

  json::object pool_cfg_;
  std::map<std::string, std::string> urls_;
  std::vector<json::object> rows_, done_;
  CollectionOptions options_;
  OutputPaths paths_;
  telemetry::GymMetrics& metrics_;
  std::unique_ptr<asio::io_context> io_ = std::make_unique<asio::io_context>(1);
  std::unique_ptr<http::PoolMetrics> pool_metrics_;  // outlives client_ and its pool
  std::unique_ptr<http::HttpClient> client_;
  std::unique_ptr<Collector> collector_;
  Outcome outcome_;
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

// On resume the materialized file wins over the input (7.7), so its rows are checked like the
// input rows (7.2): an agent this deployment does not serve is a config error before dispatch.
void check_resumed_agents(const std::filesystem::path& materialized,
                          const std::vector<json::object>& rows,
                          const std::vector<std::string>& agents) {
  std::set<std::string> unknown;
  for (const auto& row : rows)
    if (auto agent = agent_of(row); std::find(agents.begin(), agents.end(), agent) == agents.end())
      unknown.insert(agent);
  if (unknown.empty()) return;
  std::string names, configured;
  for (const auto& n : unknown) names += (names.empty() ? "'" : ", '") + n + "'";
  for (const auto& n : agents) configured += (configured.empty() ? "" : ", ") + n;
  throw core::ConfigError(materialized.string() + ": the rows to resume name agent(s) " + names +
                          " that are not responses_api_agents instances of this config; nothing "
                          "was dispatched. Configured agents: " +
                          (configured.empty() ? "(none)" : configured) +
                          ". Resume against the deployment that has them, or run without --resume");
}

// The rows to dispatch: a fresh expansion (7.3) or what --resume leaves (7.7).
struct Plan {
  std::vector<json::object> rows, done;
};

Plan plan_rows(const CollectionOptions& options, const OutputPaths& paths,
               const std::filesystem::path& input, const std::vector<std::string>& agents) {
  std::vector<JsonlLine> lines;
  try {
    lines = read_jsonl(input, options.limit);
  } catch (const std::runtime_error& e) {
    throw core::ConfigError(std::string("input: ") + e.what());
  }
  if (options.limit) std::printf("Limiting the number of rows to %lld\n", static_cast<long long>(*options.limit));
  if (options.agent_name)
    std::printf("Using `%s` for rows that do not already have an agent ref\n", options.agent_name->c_str());
  if (!options.create_params_overrides.empty())
    std::printf("Overriding responses_create_params fields with %s\n",
                core::render_json(options.create_params_overrides).c_str());
  auto expanded = expand_rows(input, lines, options, agents);

  Plan plan;
  if (options.resume) {
    if (std::filesystem::exists(paths.materialized) && std::filesystem::exists(paths.rollouts)) {
      auto resumed = plan_resume(paths, expanded, max_rollout_attempts());
      check_resumed_agents(paths.materialized, resumed.to_run, agents);
      plan.rows = std::move(resumed.to_run);
      plan.done = std::move(resumed.done);
      return plan;
    }
    for (const auto* p : {&paths.rollouts, &paths.materialized})
      if (!std::filesystem::exists(*p))
        std::printf("Skipping resume_from_cache because %s doesn't exist!\n", p->c_str());
  } else {
    std::puts("Clearing output fpath since `resume_from_cache=False`!");
  }
  write_jsonl(paths.materialized, expanded);
  std::filesystem::remove(paths.rollouts);
  std::filesystem::remove(paths.failures);  // R6: a fresh run starts an empty sidecar
  plan.rows = std::move(expanded);
  return plan;
}

void print_files(const OutputPaths& paths, const Outcome& outcome) {
  if (outcome.counts.failed > 0)
    std::printf("Failures: %zu rows in %s\n", outcome.counts.failed, paths.failures.c_str());
  std::printf("Finished rollout collection! View results at:\n"
              "Fully materialized inputs: %s\nRollouts: %s\nAggregate metrics: %s\n",
              paths.materialized.c_str(), paths.rollouts.c_str(),
              outcome.aggregate_path ? outcome.aggregate_path->c_str() : "None");
  std::fflush(stdout);
}

// Runs the collection while `supervise` (called every 100 ms) reports nothing; returns the exit
// code of runtime.md 9.5.
int collect(json::object pool_cfg, std::map<std::string, std::string> urls, Plan plan,
            const CollectionOptions& options, const OutputPaths& paths,
            telemetry::GymMetrics& metrics,
            const std::function<int(std::chrono::milliseconds)>& supervise) {
  if (options.concurrency)
    std::printf("Querying with %lld concurrent requests\n", static_cast<long long>(*options.concurrency));
  std::fflush(stdout);
  CollectionThread collection(std::move(pool_cfg), std::move(urls), std::move(plan.rows),
                              std::move(plan.done), options, paths, metrics);
  int stop_code = 0;
  while (!collection.finished())
    if ((stop_code = supervise(std::chrono::milliseconds(100))) != 0) break;
  if (stop_code != 0 && !collection.finished()) {
    collection.cancel();
    std::fflush(stdout);
    std::fprintf(stderr,
                 "Collection stopped: rows already written stay; the unfinished rollouts run with "
                 "the same command and --resume.\n");
    return stop_code;
  }
  auto& o = collection.outcome();
  if (!o.error.empty()) {
    std::fprintf(stderr, "error: collection failed: %s\n", o.error.c_str());
    return 2;
  }
  print_files(paths, o);
  if (stop_code != 0) return stop_code;
  // Failure rows come first: the aggregate call usually fails for the same reason (a dead
  // deployment), and --resume is what the user needs to know about.
  if (o.counts.failed > 0 || o.counts.dispatched < o.total) return 3;
  if (o.aggregate_failed) return 2;
  return 0;
}

// The telemetry of a --no-serve collector (T2, T3): its own `telemetry:` block, else the served
// one without its Prometheus port (never adopted); run id as telemetry.md 3.4 orders it.
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

}  // namespace

int run_eval(const core::ConfigSources& sources, bool no_serve,
             const telemetry::PipelineFactory& pipelines) {
  core::raise_fd_limit();
  json::object local = core::load_config(sources);
  auto options = CollectionOptions::from_config(local, no_serve);
  auto paths = OutputPaths::for_output(options.output);
  std::error_code ec;
  if (paths.rollouts.has_parent_path()) std::filesystem::create_directories(paths.rollouts.parent_path(), ec);
  if (ec)
    throw core::ConfigError("output_jsonl_fpath: cannot create the directory " +
                            paths.rollouts.parent_path().string() + ": " + ec.message());

  if (no_serve) {
    json::object served;
    try {
      served = served_config(local);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 2;
    }
    auto telemetry = collector_telemetry(local, served, pipelines);  // before the pool (D4)
    auto plan = plan_rows(options, paths, *options.input, agent_names(served));
    // The deployment's client keys (retry budget, pool limits) unless set here.
    json::object pool_cfg = served;
    core::deep_merge(pool_cfg, local);
    block_termination_signals();
    return collect(std::move(pool_cfg), agent_urls(served), std::move(plan), options, paths,
                   telemetry->metrics(), take_termination_signal);
  }

  core::validate_server_instances(local, servers::builtin_registry().catalog());
  auto deploy_sources = sources;
  std::filesystem::path input;
  if (options.input) {
    input = *options.input;
  } else {
    input = collate_datasets(local, *options.split, paths.stem);
    // replay_model finds <dir>/<name>_rollouts.jsonl beside the collection's input.
    deploy_sources.overrides.push_back("++input_jsonl_fpath=" + input.string());
  }
  auto plan = plan_rows(options, paths, input, agent_names(local));
  orchestrator::Deployment deployment(deploy_sources, pipelines);
  int code = deployment.start();
  if (code == 0) {
    // T2: collection runs inside the orchestrator process and reports as `orchestrator`.
    code = collect(deployment.config(), agent_urls(deployment.config()), std::move(plan), options,
                   paths, deployment.telemetry()->metrics(),
                   [&](std::chrono::milliseconds wait) { return deployment.poll(wait); });
  }
  deployment.shutdown();
  return code;
}

}  // namespace gym::rollouts
