// Telemetry faults (issue 5): an unreachable or misbehaving OTLP collector never disturbs the
// recording process (docs/design/telemetry-contract.md#export-and-failure-isolation), and the
// process still ends within the shutdown bound (5 s).
//
// Each test runs tests/support/telemetry_recorder.cpp (telemetry set up from the environment
// like a real process, 2 threads recording a fixed count of histogram and counter values with
// three-attribute sets over ~1.5 s, then the bounded shutdown) against the fake collector of
// tests/support/test_server.cpp (`--otlp-mode ok|500|429|hang`) or against a port where nothing
// listens, and checks what the recorder reports (its JSON line), what it logged (stderr) and what
// the collector saw (GET /stats).
//
// The same faults over OTLP/gRPC (TelemetryFaults.Grpc*, issue 14): nothing listening, a collector
// answering UNAVAILABLE (retried like 503) then OK, or a permanent status; the collector is the
// gRPC receiver of tests/support/otlp_receiver.h (@grpc/grpc-js, decoding with the OpenTelemetry
// JS protobuf root).
//
// No speed is asserted: the machine is shared and noisy, and the figures are printed ("[figures]
// ...") for the report instead. That recording never waits for an export is shown by behaviour:
// records complete while an export hangs (RecordingNeverWaitsForAHungExport). The clock is read
// only for contracts stated in seconds: the 5 s shutdown bound (an upper bound with a margin, which
// fails only when the bound is not applied) and backoffs (lower bounds, which load cannot break).
#include <gtest/gtest.h>

#include "live_deployment.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "otlp_receiver.h"
#include "process.h"
#include "reserved_port.h"
#include "telemetry_recorder.h"
#include "temp_dir.h"
#include "text_search.h"

namespace {

namespace json = boost::json;
using gym::test::ChildProcess;
using Clock = std::chrono::steady_clock;

// The shutdown flush is bounded to 5 s; the margin covers thread joins and a loaded machine.
constexpr double kShutdownBoundSeconds = 5.0;
constexpr double kShutdownMarginSeconds = 0.5;

// Only to fail instead of hanging: a recorder that has not printed its line by then is stuck.
constexpr auto kOuterTimeout = std::chrono::seconds(60);

constexpr const char* kFailureLog = "telemetry: metrics export fail";  // "failed" and "failing"

using gym::test::count_of;

// The fake collector: gym_test_server in one OTLP mode.
class Collector {
 public:
  explicit Collector(const std::string& mode, const std::string& retry_after = "") {
    std::vector<std::string> argv{gym::test::build_path("tests/support/gym_test_server"),
                                  "--otlp-mode", mode};
    if (!retry_after.empty()) {
      argv.push_back("--retry-after");
      argv.push_back(retry_after);
    }
    process_ = std::make_unique<ChildProcess>(argv);
    port_ = process_->wait_port();
  }
  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The "otlp" object of GET /stats.
  json::object stats() const {
    const auto raw = gym::test::http_raw(port_, "GET /stats HTTP/1.1\r\nHost: t\r\n\r\n");
    const json::value v = json::parse(gym::test::body_of(raw));
    return v.at("otlp").as_object();
  }

 private:
  std::unique_ptr<ChildProcess> process_;
  int port_ = -1;
};

struct RecorderRun {
  int exit_code = -1;
  double wall_seconds = 0;  // start to exit, as seen from here
  json::object result;      // the recorder's JSON line
  std::string output;       // stdout and stderr
  std::size_t failure_lines = 0;

  std::uint64_t u(std::string_view key) const { return result.at(key).to_number<std::uint64_t>(); }
  double d(std::string_view key) const { return result.at(key).to_number<double>(); }
  std::uint64_t otlp(std::string_view key) const {
    return result.at("otlp").at(key).to_number<std::uint64_t>();
  }
};

// Runs the recorder with telemetry on and pointed at `endpoint` over `protocol`, exporting every
// `interval_ms`.
RecorderRun record(const std::string& endpoint, int interval_ms, std::vector<std::string> args = {},
                   const std::string& protocol = "http/protobuf") {
  std::vector<std::string> argv{gym::test::build_path("tests/support/gym_telemetry_recorder")};
  argv.insert(argv.end(), args.begin(), args.end());
  RecorderRun run;
  const auto start = Clock::now();
  ChildProcess recorder(argv, gym::test::collector_env(endpoint, protocol, interval_ms),
                        /*merge_stderr=*/true);
  const std::string rest = recorder.wait_for_line("{\"records\":", kOuterTimeout);
  recorder.drain(std::chrono::seconds(10));  // the rest, up to the exit
  run.exit_code = recorder.wait_exit(std::chrono::seconds(10));
  run.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  run.output = recorder.output();
  run.failure_lines = count_of(run.output, kFailureLog);
  if (!rest.empty()) run.result = json::parse("{\"records\":" + rest).as_object();
  return run;
}

void print_figures(const std::string& name, const RecorderRun& run, const json::object* collector) {
  std::string line = "[figures] " + name;
  if (!run.result.empty()) {
    line += " records=" + std::to_string(run.u("records")) +
            " max_record_us=" + std::to_string(run.d("max_record_ns") / 1000.0) +
            " slow_records(>1ms)=" + std::to_string(run.u("slow_records")) +
            " recording_s=" + std::to_string(run.d("recording_seconds")) +
            " shutdown_s=" + std::to_string(run.d("shutdown_seconds")) +
            " exports=" + std::to_string(run.u("exports")) +
            " failures=" + std::to_string(run.u("failures"));
    if (run.result.contains("otlp")) {
      line += " sent=" + std::to_string(run.otlp("batches_sent")) +
              " dropped=" + std::to_string(run.otlp("batches_dropped")) +
              " retries=" + std::to_string(run.otlp("retries"));
    }
  }
  line += " wall_s=" + std::to_string(run.wall_seconds) +
          " failure_log_lines=" + std::to_string(run.failure_lines);
  if (collector) line += " collector_requests=" + json::serialize(collector->at("requests"));
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  ::testing::Test::RecordProperty("figures", line);
}

// What every fault (and the healthy baseline) must give: the process ran to the end, recorded
// every value, was never blocked by export, and shut down within the 5 s bound.
void expect_undisturbed(const RecorderRun& run) {
  ASSERT_FALSE(run.result.empty()) << "the recorder printed no result line:\n" << run.output;
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.u("records"), run.u("expected_records"));
  EXPECT_LE(run.d("shutdown_seconds"), kShutdownBoundSeconds + kShutdownMarginSeconds);
  // The whole process: recording, the bounded shutdown, and a little for start and exit.
  EXPECT_LE(run.wall_seconds, run.d("recording_seconds") + kShutdownBoundSeconds + 2.0);
}

// The batches and points the failure log lines account for: the first line ("failed, dropped P
// point(s)") is one batch, each summary says "dropped B batch(es), P point(s)".
std::pair<std::uint64_t, std::uint64_t> logged_drops(const std::string& output) {
  std::uint64_t batches = 0, points = 0;
  const std::string first = "telemetry: metrics export failed, dropped ";
  const std::string summary = "telemetry: metrics export failing: dropped ";
  for (auto at = output.find("telemetry: metrics export fail"); at != std::string::npos;
       at = output.find("telemetry: metrics export fail", at + 1)) {
    if (output.compare(at, first.size(), first) == 0) {
      batches += 1;
      points += std::stoull(output.substr(at + first.size()));
    } else if (output.compare(at, summary.size(), summary) == 0) {
      const auto b = at + summary.size();
      batches += std::stoull(output.substr(b));
      points += std::stoull(output.substr(output.find(", ", b) + 2));
    }
  }
  return {batches, points};
}

// Failures are counted and logged rate-limited: at least one line, never more than one per export
// (so never per record), at most one per interval after the first, and together the lines account
// for every dropped batch and point, the final export's included.
void expect_failures_counted_and_logged_once_per_interval(const RecorderRun& run, int interval_ms) {
  const auto exports = run.u("exports");
  EXPECT_GE(exports, 1u);
  EXPECT_EQ(run.u("failures"), exports);
  EXPECT_EQ(run.otlp("batches_dropped"), exports);
  EXPECT_GT(run.otlp("points_dropped"), 0u);
  EXPECT_EQ(run.otlp("batches_sent"), 0u);
  EXPECT_GE(run.failure_lines, 1u) << run.output;
  EXPECT_LE(run.failure_lines, exports) << run.output;
  EXPECT_LE(static_cast<double>(run.failure_lines), 1.0 + run.wall_seconds * 1000.0 / interval_ms)
      << run.output;
  EXPECT_EQ(count_of(run.output, "telemetry: metrics export failed, dropped"), 1u)
      << "only the first failure of a run is logged on its own:\n"
      << run.output;
  const auto [batches, points] = logged_drops(run.output);
  EXPECT_EQ(batches, run.otlp("batches_dropped")) << run.output;
  EXPECT_EQ(points, run.otlp("points_dropped")) << run.output;
  EXPECT_EQ(count_of(run.output, "the final metrics export did not finish"), 0u)
      << "the exporter gives up within the bound; nothing is abandoned:\n"
      << run.output;
}

// Gaps between consecutive collector requests, in seconds.
std::vector<double> gaps(const json::object& collector) {
  std::vector<double> out;
  const auto& times = collector.at("times_ms").as_array();
  for (std::size_t i = 1; i < times.size(); ++i) {
    out.push_back((times[i].to_number<double>() - times[i - 1].to_number<double>()) / 1000.0);
  }
  return out;
}

constexpr int kInterval = 200;  // ms: several exports while the recorder records (~1.5 s)

// ---- Baseline ----

TEST(TelemetryFaults, OkCollectorReceivesEveryExportAndTheFinalFlush) {
  Collector collector("ok");
  ASSERT_GT(collector.port(), 0);
  const RecorderRun run = record(collector.endpoint(), kInterval);
  const json::object seen = collector.stats();
  print_figures("ok", run, &seen);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  EXPECT_TRUE(run.result.at("shutdown_ok").as_bool());
  EXPECT_GE(run.u("exports"), 3u) << "exports should happen while recording";
  EXPECT_EQ(run.u("failures"), 0u);
  EXPECT_EQ(run.otlp("batches_sent"), run.u("exports"));
  EXPECT_EQ(run.otlp("batches_dropped"), 0u);
  EXPECT_EQ(run.otlp("retries"), 0u);
  EXPECT_EQ(seen.at("requests").to_number<std::uint64_t>(), run.u("exports"));
  EXPECT_EQ(seen.at("undecodable").to_number<std::uint64_t>(), 0u);
  // The last request is the shutdown flush: cumulative totals of every record made.
  const auto& last = seen.at("last").as_object();
  ASSERT_TRUE(last.contains("test.recorder.records")) << json::serialize(seen);
  EXPECT_EQ(last.at("test.recorder.records").to_number<double>(),
            static_cast<double>(run.u("records")));
  EXPECT_EQ(last.at("test.recorder.duration_ms").to_number<double>(),
            static_cast<double>(run.u("records")));
  EXPECT_EQ(count_of(run.output, "telemetry:"), 0u) << run.output;
}

TEST(TelemetryFaults, AProcessShorterThanOneIntervalStillExports) {
  // With a 60 s interval no periodic export happens in a 0.15 s life; the shutdown flush alone
  // delivers the data.
  Collector collector("ok");
  ASSERT_GT(collector.port(), 0);
  const RecorderRun run = record(collector.endpoint(), 60'000, {"--batches", "3"});
  const json::object seen = collector.stats();
  print_figures("ok-short", run, &seen);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  EXPECT_TRUE(run.result.at("shutdown_ok").as_bool());
  EXPECT_EQ(run.u("exports"), 1u);
  EXPECT_EQ(run.u("failures"), 0u);
  EXPECT_EQ(seen.at("requests").to_number<std::uint64_t>(), 1u);
  const auto& last = seen.at("last").as_object();
  ASSERT_TRUE(last.contains("test.recorder.records")) << json::serialize(seen);
  EXPECT_EQ(last.at("test.recorder.records").to_number<double>(),
            static_cast<double>(run.u("records")));
}

// ---- Collector down ----

TEST(TelemetryFaults, CollectorDown) {
  const gym::test::ReservedPort dead;  // bound, not listening: every connection is refused
  const RecorderRun run = record("http://127.0.0.1:" + dead.text(), kInterval);
  print_figures("down", run, nullptr);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  expect_failures_counted_and_logged_once_per_interval(run, kInterval);
  EXPECT_FALSE(run.result.at("shutdown_ok").as_bool());
  EXPECT_NE(run.output.find("refused"), std::string::npos) << run.output;
  // A refused connection is retryable, but the 1 s backoff never fits the 200 ms export budget.
  EXPECT_EQ(run.otlp("retries"), 0u);
}

TEST(TelemetryFaults, CollectorDownIsRetriedWithBackoffWithinTheBudget) {
  // A 5 s interval: only the shutdown flush exports, with a 5 s budget (the export timeout and
  // the shutdown bound). Attempts at 0, ~1 s, ~3 s (1 s, 2 s backoff +-20 %); the next backoff (>=
  // 3.2 s) would pass the budget, so the batch is dropped there.
  const gym::test::ReservedPort dead;  // bound, not listening: every connection is refused
  const RecorderRun run = record("http://127.0.0.1:" + dead.text(), 5000);
  print_figures("down-budget", run, nullptr);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  expect_failures_counted_and_logged_once_per_interval(run, 5000);
  EXPECT_EQ(run.u("exports"), 1u);
  EXPECT_EQ(run.otlp("retries"), 2u);
  EXPECT_GE(run.d("shutdown_seconds"), 2.4 - 0.05);  // two backoffs: >= 0.8 s + 1.6 s
}

// ---- Collector answering 500: not retryable (a status that is not retryable drops the batch) ----

TEST(TelemetryFaults, Collector500) {
  Collector collector("500");
  ASSERT_GT(collector.port(), 0);
  const RecorderRun run = record(collector.endpoint(), kInterval);
  const json::object seen = collector.stats();
  print_figures("500", run, &seen);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  expect_failures_counted_and_logged_once_per_interval(run, kInterval);
  // One request per export: a 500 is never retried.
  EXPECT_EQ(seen.at("requests").to_number<std::uint64_t>(), run.u("exports"));
  EXPECT_EQ(run.otlp("retries"), 0u);
  EXPECT_NE(run.output.find("HTTP 500"), std::string::npos) << run.output;
}

TEST(TelemetryFaults, Collector500IsNotRetriedEvenWithTimeLeft) {
  Collector collector("500");
  ASSERT_GT(collector.port(), 0);
  const RecorderRun run = record(collector.endpoint(), 5000);
  const json::object seen = collector.stats();
  print_figures("500-budget", run, &seen);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  expect_failures_counted_and_logged_once_per_interval(run, 5000);
  EXPECT_EQ(run.u("exports"), 1u);
  EXPECT_EQ(seen.at("requests").to_number<std::uint64_t>(), 1u);
  EXPECT_EQ(run.otlp("retries"), 0u);
  EXPECT_LT(run.d("shutdown_seconds"), 1.0) << "a dropped batch does not wait for a backoff";
}

// ---- Collector answering 429: retryable, with backoff, within the budget ----

TEST(TelemetryFaults, Collector429) {
  Collector collector("429");
  ASSERT_GT(collector.port(), 0);
  const RecorderRun run = record(collector.endpoint(), kInterval);
  const json::object seen = collector.stats();
  print_figures("429", run, &seen);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  expect_failures_counted_and_logged_once_per_interval(run, kInterval);
  // Retryable, but the first backoff (1 s +-20 %) does not fit a 200 ms export budget: one
  // request per export and no retry, never a burst of immediate retries.
  EXPECT_EQ(seen.at("requests").to_number<std::uint64_t>(), run.u("exports"));
  EXPECT_EQ(run.otlp("retries"), 0u);
  EXPECT_NE(run.output.find("no time left to retry"), std::string::npos) << run.output;
}

TEST(TelemetryFaults, Collector429IsRetriedWithExponentialBackoff) {
  // Only the shutdown flush exports (5 s interval), with a 5 s budget: requests at 0, 1 s and
  // 3 s (+-20 % jitter each), then the next backoff (>= 3.2 s) would pass the budget.
  Collector collector("429");
  ASSERT_GT(collector.port(), 0);
  const RecorderRun run = record(collector.endpoint(), 5000);
  const json::object seen = collector.stats();
  print_figures("429-budget", run, &seen);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  expect_failures_counted_and_logged_once_per_interval(run, 5000);
  EXPECT_EQ(run.u("exports"), 1u);
  EXPECT_EQ(run.otlp("retries"), 2u);
  ASSERT_EQ(seen.at("requests").to_number<std::uint64_t>(), 3u);
  const auto g = gaps(seen);
  ASSERT_EQ(g.size(), 2u);
  std::printf("[figures] 429-budget backoff gaps: %.3f s, %.3f s\n", g[0], g[1]);
  // At least the backoff less its jitter; how much longer depends on the machine's load (the two
  // retries fitting in the 5 s budget bound them from above).
  EXPECT_GE(g[0], 0.8 - 0.05);
  EXPECT_GE(g[1], 1.6 - 0.05);
}

TEST(TelemetryFaults, Collector429RetryAfterIsHonoured) {
  // Retry-After: 2 replaces the exponential backoff (and its jitter): requests at 0, 2 s, 4 s;
  // a third retry (at 6 s) would pass the 5 s budget.
  Collector collector("429", "2");
  ASSERT_GT(collector.port(), 0);
  const RecorderRun run = record(collector.endpoint(), 5000);
  const json::object seen = collector.stats();
  print_figures("429-retry-after", run, &seen);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  expect_failures_counted_and_logged_once_per_interval(run, 5000);
  EXPECT_EQ(run.otlp("retries"), 2u);
  ASSERT_EQ(seen.at("requests").to_number<std::uint64_t>(), 3u);
  const auto g = gaps(seen);
  ASSERT_EQ(g.size(), 2u);
  std::printf("[figures] 429-retry-after gaps: %.3f s, %.3f s\n", g[0], g[1]);
  for (double gap : g) EXPECT_GE(gap, 2.0 - 0.05);  // never sooner than the server asked
}

// ---- Collector hanging: connections accepted, requests never answered ----

TEST(TelemetryFaults, CollectorHanging) {
  Collector collector("hang");
  ASSERT_GT(collector.port(), 0);
  const RecorderRun run = record(collector.endpoint(), kInterval);
  const json::object seen = collector.stats();
  print_figures("hang", run, &seen);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  expect_failures_counted_and_logged_once_per_interval(run, kInterval);
  // Every export reaches the collector and is abandoned at its 200 ms budget: a hung request
  // never keeps the exporter's connection slots, so later exports still go out.
  EXPECT_EQ(seen.at("requests").to_number<std::uint64_t>(), run.u("exports"));
}

// A blocking design (a record taking a lock the export holds over its I/O) would make no record
// while an export hangs: here every record is made while one does.
TEST(TelemetryFaults, RecordingNeverWaitsForAHungExport) {
  Collector collector("hang");
  ASSERT_GT(collector.port(), 0);
  gym::test::TempDir tmp;
  const std::string go = tmp.file("go");
  std::vector<std::string> argv{gym::test::build_path("tests/support/gym_telemetry_recorder"),
                                "--during-flush", go, "--pause-ms", "0"};
  // A 60 s interval: the recorder's own flush is the only export before its shutdown; the
  // export timeout (10 s) outlasts the recording by far.
  ChildProcess recorder(argv,
                        gym::test::collector_env(collector.endpoint(), "http/protobuf", 60'000),
                        /*merge_stderr=*/true);
  // The flush's request reached the collector, which holds it unanswered.
  for (int i = 0; i < 6000 && collector.stats().at("requests").to_number<std::uint64_t>() < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(collector.stats().at("requests").to_number<std::uint64_t>(), 1u) << recorder.output();
  tmp.write("go", "\n");
  const std::string rest = recorder.wait_for_line("{\"records\":", kOuterTimeout);
  recorder.drain(std::chrono::seconds(10));
  ASSERT_FALSE(rest.empty()) << recorder.output();
  const json::object result = json::parse("{\"records\":" + rest).as_object();
  const auto records = result.at("records").to_number<std::uint64_t>();
  EXPECT_EQ(records, result.at("expected_records").to_number<std::uint64_t>());
  EXPECT_EQ(result.at("records_while_flushing").to_number<std::uint64_t>(), records)
      << "records waited for the hung export:\n"
      << recorder.output();
  EXPECT_EQ(recorder.wait_exit(std::chrono::seconds(20)), 0) << recorder.output();
}

TEST(TelemetryFaults, CollectorHangingAtShutdownIsCutAtTheBound) {
  // A 60 s interval: the export timeout (30 s) and the OTLP timeout (10 s) are both longer than
  // the shutdown bound, so only the 5 s shutdown bound ends the final export.
  Collector collector("hang");
  ASSERT_GT(collector.port(), 0);
  const RecorderRun run = record(collector.endpoint(), 60'000);
  const json::object seen = collector.stats();
  print_figures("hang-shutdown", run, &seen);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  expect_failures_counted_and_logged_once_per_interval(run, 60'000);
  EXPECT_FALSE(run.result.at("shutdown_ok").as_bool());
  // The exporter gets the bound less a 5 % wrap-up slice: it gives up at 4.75 s.
  EXPECT_GE(run.d("shutdown_seconds"), kShutdownBoundSeconds * 0.95 - 0.05);
  EXPECT_EQ(seen.at("requests").to_number<std::uint64_t>(), 1u);
  EXPECT_EQ(run.u("exports"), 1u);
  EXPECT_NE(run.output.find("the export did not finish within its deadline"), std::string::npos)
      << run.output;
}

// ---- OTLP/gRPC (issue 14)
// ------------------------------------------------------------------------

using gym::test::OtlpReceiver;

std::unique_ptr<OtlpReceiver> grpc_collector(int fail_calls = 0, int fail_code = 14,
                                             bool hang = false) {
  OtlpReceiver::Options options;
  options.transport = OtlpReceiver::Transport::grpc;
  options.fail_calls = fail_calls;
  options.fail_code = fail_code;
  options.hang = hang;
  return std::make_unique<OtlpReceiver>(std::move(options));
}

std::int64_t grpc_status(const gym::test::OtlpRequest& r) {
  const auto* v = r.headers.if_contains("grpc-status");
  return v && v->is_int64() ? v->as_int64() : -1;
}

// The test.recorder.records total of a decoded export (its last ResourceMetrics).
double records_in(const gym::test::OtlpRequest& r) {
  const auto exports = gym::test::process_exports(r);
  return exports.empty() ? 0 : gym::test::total(exports.back().metric("test.recorder.records"));
}

TEST(TelemetryFaults, GrpcCollectorDown) {
  const gym::test::ReservedPort dead;  // bound, not listening: every connection is refused
  const RecorderRun run = record("http://127.0.0.1:" + dead.text(), kInterval, {}, "grpc");
  print_figures("grpc-down", run, nullptr);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  expect_failures_counted_and_logged_once_per_interval(run, kInterval);
  EXPECT_FALSE(run.result.at("shutdown_ok").as_bool());
  EXPECT_NE(run.output.find("gRPC UNAVAILABLE"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("refused"), std::string::npos) << run.output;
  // Retryable, but the 1 s backoff never fits the 200 ms export budget.
  EXPECT_EQ(run.otlp("retries"), 0u);
  // gRPC's own log lines about the refused connection stay out of the process's log: only our
  // failure lines name it (on a loaded machine some exports end at their 200 ms deadline before
  // the refusal is seen, and say so instead).
  EXPECT_LE(count_of(run.output, "Connection refused"), run.failure_lines) << run.output;
  EXPECT_GT(count_of(run.output, "Connection refused"), 0u) << run.output;
}

TEST(TelemetryFaults, GrpcCollectorDownIsRetriedWithBackoffWithinTheBudget) {
  // As over HTTP: only the shutdown flush exports, with a 5 s budget; attempts at 0, ~1 s, ~3 s,
  // and the next backoff would pass the budget.
  const gym::test::ReservedPort dead;
  const RecorderRun run = record("http://127.0.0.1:" + dead.text(), 5000, {}, "grpc");
  print_figures("grpc-down-budget", run, nullptr);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  expect_failures_counted_and_logged_once_per_interval(run, 5000);
  EXPECT_EQ(run.u("exports"), 1u);
  EXPECT_EQ(run.otlp("retries"), 2u);
}

TEST(TelemetryFaults, GrpcCollectorUnavailableThenOkIsRetriedAndDelivers) {
  // The collector answers the first two calls UNAVAILABLE: the shutdown flush (the only export,
  // 5 s budget) is retried after ~1 s and ~2 s and then accepted, with nothing dropped or logged.
  auto collector = grpc_collector(2, 14);
  ASSERT_TRUE(collector->error().empty()) << collector->error();
  const RecorderRun run = record(collector->endpoint(), 5000, {}, "grpc");
  print_figures("grpc-unavailable-then-ok", run, nullptr);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  EXPECT_TRUE(run.result.at("shutdown_ok").as_bool()) << run.output;
  EXPECT_EQ(run.u("exports"), 1u);
  EXPECT_EQ(run.u("failures"), 0u);
  EXPECT_EQ(run.otlp("retries"), 2u);
  EXPECT_EQ(run.otlp("batches_sent"), 1u);
  EXPECT_EQ(run.otlp("batches_dropped"), 0u);
  EXPECT_EQ(count_of(run.output, "telemetry:"), 0u) << run.output;
  ASSERT_TRUE(collector->sync()) << collector->output();
  const auto requests = gym::test::exports_only(collector->requests());
  ASSERT_EQ(requests.size(), 3u) << collector->output();
  EXPECT_EQ(grpc_status(requests[0]), 14);
  EXPECT_EQ(grpc_status(requests[1]), 14);
  EXPECT_EQ(grpc_status(requests[2]), 0);
  // Every attempt carried the same batch: the cumulative totals of every record made.
  for (const auto& r : requests) {
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(records_in(r), static_cast<double>(run.u("records")));
  }
}

TEST(TelemetryFaults, GrpcCollectorUnavailable) {
  // Always UNAVAILABLE, as Collector429: retryable, but no backoff fits a 200 ms export budget:
  // one call per export, never a burst of immediate retries.
  auto collector = grpc_collector(-1, 14);
  ASSERT_TRUE(collector->error().empty()) << collector->error();
  const RecorderRun run = record(collector->endpoint(), kInterval, {}, "grpc");
  print_figures("grpc-unavailable", run, nullptr);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  expect_failures_counted_and_logged_once_per_interval(run, kInterval);
  EXPECT_EQ(run.otlp("retries"), 0u);
  EXPECT_NE(run.output.find("no time left to retry"), std::string::npos) << run.output;
  ASSERT_TRUE(collector->sync()) << collector->output();
  EXPECT_EQ(gym::test::exports_only(collector->requests()).size(), run.u("exports"));
}

TEST(TelemetryFaults, GrpcCollectorHanging) {
  // Calls accepted and never answered, as CollectorHanging: each export's call ends at its 200 ms
  // deadline, and a hung call never holds up the next export (HTTP/2 streams of one channel).
  auto collector = grpc_collector(0, 14, /*hang=*/true);
  ASSERT_TRUE(collector->error().empty()) << collector->error();
  const RecorderRun run = record(collector->endpoint(), kInterval, {}, "grpc");
  print_figures("grpc-hang", run, nullptr);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  expect_failures_counted_and_logged_once_per_interval(run, kInterval);
  ASSERT_TRUE(collector->sync()) << collector->output();
  EXPECT_EQ(gym::test::exports_only(collector->requests()).size(), run.u("exports"));
}

TEST(TelemetryFaults, GrpcPermanentStatusIsNotRetriedEvenWithTimeLeft) {
  // PERMISSION_DENIED, as Collector500IsNotRetriedEvenWithTimeLeft: one call, dropped at once.
  auto collector = grpc_collector(-1, 7);
  ASSERT_TRUE(collector->error().empty()) << collector->error();
  const RecorderRun run = record(collector->endpoint(), 5000, {}, "grpc");
  print_figures("grpc-permission-denied", run, nullptr);
  ASSERT_NO_FATAL_FAILURE(expect_undisturbed(run));
  expect_failures_counted_and_logged_once_per_interval(run, 5000);
  EXPECT_EQ(run.u("exports"), 1u);
  EXPECT_EQ(run.otlp("retries"), 0u);
  EXPECT_NE(run.output.find("gRPC PERMISSION_DENIED"), std::string::npos) << run.output;
  ASSERT_TRUE(collector->sync()) << collector->output();
  EXPECT_EQ(gym::test::exports_only(collector->requests()).size(), 1u);
}

// ---- A deployment's shutdown with a collector that never answers (issue 28) ----

// The orchestrator's flush, every server's last export and its own used to come one after the
// other, each with its 5 s bound, each signal of each process saying its failure: 15 s and nine
// warnings for three servers. One bound for the whole shutdown: the orchestrator flushes for at
// most 1 s and tells every server it starts that the 4 s left are its share
// (GYM_TELEMETRY_SHUTDOWN_MS), and what could not be exported is said in one line. (How long the
// stop takes is a benchmark, not a test: bench/shutdown_dead_collector.sh.)
TEST(TelemetryFaults, ADeploymentStopsWithinOneBoundAndSaysItsLostExportsOnce) {
  Collector collector("hang");
  ASSERT_GT(collector.port(), 0);
  gym::test::FakeEndpoint fake;
  gym::test::TempDir tmp;
  const std::string config = gym::test::write_file(
      tmp, "m.yaml",
      "policy_model:\n  responses_api_models:\n    vllm_model:\n      base_url: " + fake.base() +
          "\n      api_key: k\n      model: fake-model\n      return_token_id_information: "
          "false\n");
  std::string env;
  for (const auto& e : gym::test::collector_env(collector.endpoint(), "http/protobuf", 60000))
    env += "'" + e + "' ";
  gym::test::Deployment d("--config " + config, tmp.file("log"), env + "OTEL_TRACES_EXPORTER=otlp");
  ASSERT_TRUE(d.ready()) << d.output();
  // Every server runs with its share of the bound: the 5 s less the orchestrator's 1 s flush.
  const auto servers = d.server_pids();
  ASSERT_EQ(servers.size(), 1u) << d.head_get("/server_instances");
  for (const auto& [name, pid] : servers) {
    const auto environment = gym::test::environ_of(pid);
    ASSERT_FALSE(environment.empty()) << name << " (pid " << pid << ") is not running";
    ASSERT_TRUE(environment.contains("GYM_TELEMETRY_SHUTDOWN_MS")) << name;
    EXPECT_EQ(environment.at("GYM_TELEMETRY_SHUTDOWN_MS"), "4000") << name;
  }
  const auto raw = gym::test::http_raw(d.port_of("policy_model"),
                                       gym::test::post("/v1/responses", R"({"input":"hi"})"));
  ASSERT_EQ(gym::test::status_of(raw), 200) << raw;
  EXPECT_EQ(d.stop(), 143) << d.output();
  const std::string log = d.output();
  const std::string report = "telemetry: the last export at shutdown did not complete: ";
  EXPECT_EQ(count_of(log, report), 1u) << log;
  // This process's own failures too: no "export failed" line of its own.
  EXPECT_EQ(count_of(log, "warning telemetry:"), 1u) << log;
  // The servers' failures are in that line, not lines of their own.
  EXPECT_NE(log.find("server policy_model: "), std::string::npos) << log;
  for (std::size_t at = log.find("(policy_model) "); at != std::string::npos;
       at = log.find("(policy_model) ", at + 1))
    EXPECT_EQ(log.substr(at, log.find('\n', at) - at).find("telemetry:"), std::string::npos) << log;
}

}  // namespace
