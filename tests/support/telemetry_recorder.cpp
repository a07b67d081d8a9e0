// A recording program for the telemetry fault tests (issue 5): it sets telemetry up the way a
// real gym-cpp process does (settings from the environment: NEMO_GYM_OTEL_ENABLED,
// OTEL_EXPORTER_OTLP_*, OTEL_METRIC_EXPORT_INTERVAL, ...; then MetricsPipeline), records a fixed
// number of values from several threads while the periodic reader exports, shuts the pipeline
// down (the shutdown flush, bounded to 5 s) and prints one JSON line on stdout:
//
//   {"records": 6000, "expected_records": 6000, "max_record_ns": 41210, "slow_records": 0,
//    "recording_seconds": 1.52, "shutdown_seconds": 0.003, "shutdown_ok": true,
//    "exports": 8, "failures": 0, "otlp": {"batches_sent": 8, ...}}
//
// `records` counts loop iterations; each is one histogram record and one counter add, both with
// a three-attribute set, and each call is timed on its own (max_record_ns is the longest single
// call; slow_records the calls above 1 ms). Logs go to stderr as in every gym process. Exit 0
// unless the settings are invalid (1) or telemetry is not active (2).
//
// Options: --threads N (2), --batches N (30), --batch-size N (100), --pause-ms N (50): each
// thread records `batches` batches of `batch-size` iterations with a pause after each batch, so
// the default run spans about 1.5 s. --during-flush PATH: first start a flush of the pipeline on a
// thread of its own, wait until the file PATH exists (the test creates it once the collector holds
// that export's request unanswered), then record; "records_while_flushing" counts the records
// made before that flush returned. A recording that waited for an export would make none.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "core/logging.h"
#include "exporters/metrics_pipeline.h"
#include "telemetry/config.h"

namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

struct Options {
  int threads = 2;
  int batches = 30;
  int batch_size = 100;
  int pause_ms = 50;
  std::string during_flush;  // the go file of --during-flush
};

struct ThreadResult {
  std::uint64_t records = 0;
  std::int64_t max_record_ns = 0;
  std::uint64_t slow_records = 0;
};

constexpr std::int64_t kSlowNs = 1'000'000;

template <class F>
void timed(ThreadResult& r, F&& call) {
  const auto t0 = Clock::now();
  call();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
  r.max_record_ns = std::max(r.max_record_ns, ns);
  if (ns > kSlowNs) ++r.slow_records;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--during-flush") {
      opt.during_flush = argv[i + 1];
      continue;
    }
    const int v = std::stoi(argv[i + 1]);
    if (k == "--threads")
      opt.threads = v;
    else if (k == "--batches")
      opt.batches = v;
    else if (k == "--batch-size")
      opt.batch_size = v;
    else if (k == "--pause-ms")
      opt.pause_ms = v;
    else {
      std::cerr << "unknown flag " << k << "\n";
      return 1;
    }
  }
  gym::core::init_logging(false);

  const auto env = gym::telemetry::process_env();
  std::unique_ptr<gym::exporters::MetricsPipeline> pipeline;
  try {
    const auto settings = gym::telemetry::resolve_settings(json::object{}, env);
    const std::string run_id = gym::telemetry::resolve_run_id(settings, env);
    pipeline = std::make_unique<gym::exporters::MetricsPipeline>(
        settings, gym::telemetry::ProcessIdentity{"telemetry_recorder", "test"}, run_id, env);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  if (!pipeline->active()) {
    std::cerr << "telemetry is not active (set NEMO_GYM_OTEL_ENABLED=1)\n";
    return 2;
  }

  auto& provider = pipeline->provider();
  const auto histogram = provider.create_histogram(
      "test.recorder.duration_ms", "ms", "Durations recorded by the fault-test recorder",
      {0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000});
  const auto counter = provider.create_counter<std::int64_t>(
      "test.recorder.records", "{record}", "Iterations of the fault-test recorder");

  std::atomic<bool> flushing{false};
  std::thread flush;
  if (!opt.during_flush.empty()) {
    // A point of its own, so the flush has something to export (an empty one sends nothing).
    provider.create_counter<std::int64_t>("test.recorder.flushes", "{flush}", "Flushes started")
        .add(1, {});
    flushing = true;
    flush = std::thread([&] {
      pipeline->force_flush(std::chrono::seconds(30));
      flushing = false;
    });
    while (!std::filesystem::exists(opt.during_flush))
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::atomic<std::uint64_t> records_while_flushing{0};

  std::vector<ThreadResult> results(static_cast<std::size_t>(opt.threads));
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int t = 0; t < opt.threads; ++t) {
    threads.emplace_back([&, t] {
      ThreadResult& r = results[static_cast<std::size_t>(t)];
      const std::int64_t thread_id = t;
      static constexpr const char* kOutcomes[] = {"ok", "abandoned"};
      static constexpr const char* kConstraints[] = {"total", "per_host", "unknown"};
      for (int b = 0; b < opt.batches; ++b) {
        for (int i = 0; i < opt.batch_size; ++i) {
          // Three attributes, unbound: the lookup path of a set seen before (2 x 3 x threads
          // series in all).
          const char* outcome = kOutcomes[i % 2];
          const char* constraint = kConstraints[(i / 2) % 3];
          const double value = static_cast<double>((i * 7 + b) % 1200) * 0.9;
          timed(r, [&] {
            histogram.record(value, {{"test.outcome", outcome},
                                     {"test.constraint", constraint},
                                     {"test.thread", thread_id}});
          });
          timed(r, [&] {
            counter.add(1, {{"test.outcome", outcome},
                            {"test.constraint", constraint},
                            {"test.thread", thread_id}});
          });
          ++r.records;
          if (flushing) ++records_while_flushing;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(opt.pause_ms));
      }
    });
  }
  for (auto& th : threads) th.join();
  const auto recorded = Clock::now();
  if (flush.joinable()) flush.join();
  const auto shutdown_start = Clock::now();

  const bool shutdown_ok = pipeline->shutdown();
  const auto stopped = Clock::now();

  ThreadResult total;
  for (const auto& r : results) {
    total.records += r.records;
    total.max_record_ns = std::max(total.max_record_ns, r.max_record_ns);
    total.slow_records += r.slow_records;
  }
  const auto stats = pipeline->stats();
  json::object out{
      {"records", total.records},
      {"expected_records", static_cast<std::uint64_t>(opt.threads) *
                               static_cast<std::uint64_t>(opt.batches) *
                               static_cast<std::uint64_t>(opt.batch_size)},
      {"max_record_ns", total.max_record_ns},
      {"slow_records", total.slow_records},
      {"records_while_flushing", records_while_flushing.load()},
      {"recording_seconds", std::chrono::duration<double>(recorded - start).count()},
      {"shutdown_seconds", std::chrono::duration<double>(stopped - shutdown_start).count()},
      {"shutdown_ok", shutdown_ok},
      {"exports", stats.reader.exports},
      {"failures", stats.reader.failures},
  };
  if (stats.otlp) {
    // Metrics: the sender's items are data points.
    out["otlp"] = json::object{{"batches_sent", stats.otlp->batches_sent},
                               {"batches_dropped", stats.otlp->batches_dropped},
                               {"points_dropped", stats.otlp->items_dropped},
                               {"retries", stats.otlp->retries},
                               {"points_rejected", stats.otlp->items_rejected}};
  }
  const std::string line = json::serialize(out) + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
  return 0;
}
