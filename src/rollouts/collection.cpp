#include "rollouts/collection.h"
#include "core/console.h"

#include "core/secrets.h"
#include "http/client.h"
#include "http/pool_metrics.h"
#include "rollouts/aggregate.h"
#include "rollouts/collector.h"
#include "rollouts/options.h"
#include "rollouts/progress.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

namespace gym::rollouts {
namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// What the collection produced; read by the supervising thread after `finished`.
struct Outcome {
  CollectionCounts counts;
  std::size_t total = 0;
  std::string stop_reason;  // the collector stopped on its own: the endpoint is at fault
  bool aggregate_failed = false;
  std::string aggregate_error;
  std::optional<std::filesystem::path> aggregate_path;
  json::array aggregate_entries;
  std::string error;  // a failure of the collector itself (e.g. a write error)
};

// The collection on its own event loop and thread; the caller supervises signals and servers.
class CollectionThread {
 public:
  CollectionThread(json::object pool_cfg, std::map<std::string, std::string> urls, Plan plan,
                   const CollectionOptions& options, const OutputPaths& paths,
                   telemetry::ProcessTelemetry& telemetry)
      : pool_cfg_(std::move(pool_cfg)),
        urls_(std::move(urls)),
        rows_(paths.materialized, std::move(plan.rollouts)),
        per_agent_(std::move(plan.per_agent)),
        done_(plan.done),
        options_(options),
        paths_(paths),
        metrics_(telemetry.metrics()),
        tracer_(telemetry.tracer()) {
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
    if (collector_) outcome_.counts = collector_->counts();  // what finished before the stop
    // The run's span ends marked as cut off, so the rollouts already exported keep their parent.
    job_.cut_off();
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
    client_ = std::make_unique<http::HttpClient>(io_->get_executor(), pool, pool_metrics_.get(),
                                                 &tracer_);
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
    Progress progress(per_agent_, options_.progress_summaries);
    // With the `job` span group on, every rollout of the run nests under one gym.job span.
    if (tracer_.on(telemetry::SpanGroup::job))
      job_ = tracer_.start("gym.job", telemetry::SpanKind::internal, {});
    telemetry::TraceContext in_job;
    job_.enter(in_job);
    collector_ =
        std::make_unique<Collector>(*client_, urls_, paths_, options_.route_failures_to_sidecar,
                                    in_job, options_.endpoint_error_limit);
    co_await collector_->run(rows_, options_.concurrency, progress);
    job_.end();
    progress.finish();
    outcome_.counts = collector_->counts();
    outcome_.stop_reason = collector_->stop_reason();
    if (!outcome_.stop_reason.empty()) {
      // A run the endpoint cut short has no score: --resume completes it.
      collector_.reset();
      co_return;
    }
    core::console::note("Sorting results to ensure consistent ordering\n");
    if (options_.disable_aggregation) {
      core::console::note(
          "Skipping aggregate-metrics computation because disable_aggregation=True.\n");
    } else if (outcome_.counts.succeeded + done_ > 0) {
      core::console::note("Computing aggregate metrics\n");
      try {
        // From the rollouts file: every result, this run's and earlier ones, read line by line.
        auto entries = co_await fetch_aggregate_metrics(*client_, urls_, paths_.rollouts);
        write_aggregate_metrics(paths_.aggregate_metrics, entries);
        outcome_.aggregate_path = paths_.aggregate_metrics;
        outcome_.aggregate_entries = std::move(entries);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "error: aggregate metrics: %s\n", e.what());
        outcome_.aggregate_failed = true;
        outcome_.aggregate_error = e.what();
      }
    }
    collector_.reset();  // closes the files
  }

  json::object pool_cfg_;
  std::map<std::string, std::string> urls_;
  PlannedRows rows_;  // read back from the materialized file as they are dispatched
  std::map<std::string, std::size_t> per_agent_;
  std::size_t done_;  // results of earlier runs in the rollouts file
  CollectionOptions options_;
  OutputPaths paths_;
  telemetry::GymMetrics& metrics_;
  const telemetry::Tracer& tracer_;
  telemetry::Span job_;  // gym.job: the loop's until it stops, then cancel()'s
  std::unique_ptr<asio::io_context> io_ = std::make_unique<asio::io_context>(1);
  std::unique_ptr<http::PoolMetrics> pool_metrics_;  // outlives client_ and its pool
  std::unique_ptr<http::HttpClient> client_;
  std::unique_ptr<Collector> collector_;
  Outcome outcome_;
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

// This process's command line with --resume, for the user to run after a stop; its secrets
// masked (the user gives them again: a hint on a terminal or in a log must not leak a key).
std::string resume_command() {
  // A `gym eval submit` job says how to submit again (its script exports the command).
  if (const char* set = std::getenv("GYM_RESUME_COMMAND"); set && *set) return set;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  bool resumes = false;
  for (std::string arg; std::getline(in, arg, '\0');) {
    resumes = resumes || arg == "--resume" || arg.rfind("++resume_from_cache=", 0) == 0;
    args.push_back(std::move(arg));
  }
  if (args.empty()) return "the same command with --resume";
  if (!resumes) args.push_back("--resume");
  return core::masked_command_line(args);
}

void print_files(const OutputPaths& paths, const Outcome& outcome) {
  if (outcome.counts.failed > 0)
    std::printf("Failures: %zu rows in %s\n", outcome.counts.failed, paths.failures.c_str());
  std::printf(
      "Finished rollout collection! View results at:\n"
      "Fully materialized inputs: %s\nRollouts: %s\nAggregate metrics: %s\n",
      paths.materialized.c_str(), paths.rollouts.c_str(),
      outcome.aggregate_path ? outcome.aggregate_path->c_str() : "None");
  std::fflush(stdout);
}

// What the figures above rest on, when it is not every rollout: how many have a result, why the
// others have none (grouped), and the rollouts an endpoint refused as too long for the context.
void print_caveats(const Outcome& o, std::size_t earlier_results, std::size_t total,
                   std::size_t without_result) {
  const std::size_t with_result = o.counts.succeeded + earlier_results;
  if (with_result < total) {
    std::printf("\nWARNING: the results and key metrics are over %zu of %zu rollouts", with_result,
                total);
    if (o.counts.failed > 0) std::printf("; %zu failed in this run", o.counts.failed);
    if (without_result > 0)
      std::printf("; %zu were not run again (out of attempts, or terminal)", without_result);
    std::printf("\n");
    std::vector<std::pair<std::string, std::size_t>> causes(o.counts.failure_causes.begin(),
                                                            o.counts.failure_causes.end());
    std::stable_sort(causes.begin(), causes.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    if (!causes.empty()) std::printf("Failure causes:\n");
    for (const auto& [cause, n] : causes) std::printf("  %zu \u00d7 %s\n", n, cause.c_str());
  }
  if (o.counts.context_length > 0)
    std::printf(
        "\nWARNING: in %zu of %zu rollouts the model endpoint refused a turn as too long for the "
        "model's context; those turns ended empty and were scored as such (the endpoint said: "
        "%s). Lower --max-output-tokens (responses_create_params.max_output_tokens) or shorten the "
        "input\n",
        o.counts.context_length, o.counts.succeeded, o.counts.context_length_message.c_str());
  std::fflush(stdout);
}

// The stop reason of a supervisor's exit code, in the words of the exit-code table.
std::string stop_description(int code) {
  switch (code) {
    case 130:
      return "interrupted (SIGINT)";
    case 143:
      return "terminated (SIGTERM)";
    case 2:
      return "the deployment failed: a server exited, or the deployment went away";
    default:
      return "stopped with exit code " + std::to_string(code);
  }
}

}  // namespace

void CollectionReport::planned(const Plan& plan) {
  earlier_results = plan.done;
  total = plan.to_dispatch() + earlier_results + plan.without_result;
}

json::object report_json(const CollectionReport& report, const OutputPaths& paths, int exit_code) {
  auto text_or_null = [](const std::string& text) {
    return text.empty() ? json::value(nullptr) : json::value(text);
  };
  auto path_or_null = [](const std::optional<std::filesystem::path>& path) {
    return path ? json::value(path->string()) : json::value(nullptr);
  };
  const auto& c = report.counts;
  const std::size_t with_result = c.succeeded + report.earlier_results;
  json::object rollouts{
      {"total", report.total},
      {"dispatched", c.dispatched},
      {"succeeded", c.succeeded},
      {"failed", c.failed},
      {"earlier_results", report.earlier_results},
      {"without_result", report.total > with_result ? report.total - with_result : 0},
      {"context_length_exceeded", c.context_length},
  };
  std::vector<std::pair<std::string, std::size_t>> causes(c.failure_causes.begin(),
                                                          c.failure_causes.end());
  std::stable_sort(causes.begin(), causes.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  json::array failure_causes;
  for (const auto& [cause, n] : causes)
    failure_causes.push_back(json::object{{"cause", cause}, {"rollouts", n}});
  json::object key_metrics;
  for (const auto& entry : report.aggregate_entries)
    if (const auto* name = entry.at("agent_ref").as_object().if_contains("name");
        name && name->is_string())
      key_metrics[name->get_string()] = entry.at("key_metrics");
  json::object files{
      {"rollouts", paths.rollouts.string()},
      {"materialized_inputs", paths.materialized.string()},
      {"failures", paths.failures.string()},
      {"aggregate_metrics", path_or_null(report.aggregate_metrics)},
      {"server_logs", path_or_null(report.server_logs)},
  };
  return json::object{
      {"exit_code", exit_code},
      {"rollouts", std::move(rollouts)},
      {"failure_causes", std::move(failure_causes)},
      {"key_metrics", std::move(key_metrics)},
      {"files", std::move(files)},
      {"stop_reason", text_or_null(report.stop_reason)},
      {"resume_command", text_or_null(report.resume_command)},
      {"error", text_or_null(report.error)},
  };
}

int run_collection(const json::object& client_config, std::map<std::string, std::string> agent_urls,
                   Plan plan, const CollectionOptions& options, const OutputPaths& paths,
                   telemetry::ProcessTelemetry& telemetry, const Supervisor& supervise,
                   CollectionReport* report) {
  CollectionReport unused;
  CollectionReport& r = report ? *report : unused;
  r.planned(plan);
  if (options.concurrency)
    core::console::note("Querying with %lld concurrent requests\n",
                        static_cast<long long>(*options.concurrency));
  std::fflush(stdout);
  const std::size_t earlier_results = plan.done;
  const std::size_t without_result = plan.without_result;
  const std::size_t total = plan.to_dispatch() + earlier_results + without_result;
  CollectionThread collection(client_config, std::move(agent_urls), std::move(plan), options, paths,
                              telemetry);
  int stop_code = 0;
  while (!collection.finished())
    if ((stop_code = supervise(std::chrono::milliseconds(100))) != 0) break;
  if (stop_code != 0 && !collection.finished()) {
    collection.cancel();
    core::console::end_status(true);  // the bar the cancelled collection left
    r.counts = collection.outcome().counts;
    std::fflush(stdout);
    r.stop_reason = stop_description(stop_code);
    r.resume_command = resume_command();
    std::fprintf(stderr,
                 "Collection stopped (exit code %d): rows already written stay; the unfinished "
                 "rollouts run with the same command and --resume:\n  %s\n",
                 stop_code, r.resume_command.c_str());
    return stop_code;
  }
  auto& o = collection.outcome();
  r.counts = o.counts;
  r.aggregate_metrics = o.aggregate_path;
  r.aggregate_entries = std::move(o.aggregate_entries);  // group_level_metrics grow with rollouts
  if (o.aggregate_failed) r.error = "aggregate metrics: " + o.aggregate_error;
  if (!o.error.empty()) {
    r.error = "collection failed: " + o.error;
    std::fprintf(stderr, "error: collection failed: %s\n", o.error.c_str());
    return 2;
  }
  if (!o.stop_reason.empty()) {
    r.stop_reason = o.stop_reason;
    r.resume_command = resume_command();
    print_caveats(o, earlier_results, total, without_result);
    std::fprintf(stderr,
                 "error: collection stopped: %s\nNo aggregate metrics were computed. Rows already "
                 "written stay, and failures the endpoint caused do not count as attempts: once "
                 "the endpoint works, the rest runs with the same command and --resume:\n  %s\n",
                 o.stop_reason.c_str(), r.resume_command.c_str());
    return 2;
  }
  print_files(paths, o);
  print_caveats(o, earlier_results, total, without_result);
  if (stop_code != 0) {
    r.stop_reason = stop_description(stop_code);
    return stop_code;
  }
  if (o.counts.failed > 0 || o.counts.dispatched < o.total) r.resume_command = resume_command();
  if (without_result > 0) {
    const int attempts = max_rollout_attempts();
    r.resume_command =
        "NEMO_GYM_MAX_ROLLOUT_ATTEMPTS=" + std::to_string(attempts + 3) + " " + resume_command();
    std::fprintf(stderr,
                 "%zu rollouts have no result: they failed NEMO_GYM_MAX_ROLLOUT_ATTEMPTS=%d times "
                 "or their agent marked the failure terminal (see %s). To give them more "
                 "attempts:\n  %s\n",
                 without_result, attempts, paths.failures.c_str(), r.resume_command.c_str());
    return 3;
  }
  // Failure rows come first: the aggregate call usually fails for the same reason (a dead
  // deployment), and --resume is what the user needs to know about.
  if (o.counts.failed > 0 || o.counts.dispatched < o.total) return 3;
  if (o.aggregate_failed) return 2;
  return 0;
}

}  // namespace gym::rollouts
