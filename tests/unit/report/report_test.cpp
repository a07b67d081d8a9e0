// `gym telemetry report` (docs/guides/telemetry-report.md): the percentile estimate, histogram
// sums, and the whole report read back from a console-exporter file that real providers wrote.
#include "report/report.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "exporters/console/console_exporter.h"
#include "exporters/otlp/otlp_json.h"
#include "report/report_format.h"
#include "telemetry/metrics/gym_metrics.h"
#include "telemetry/metrics/memory_sampler.h"
#include "telemetry/metrics/meter_provider.h"
#include "telemetry/resource.h"
#include "telemetry_test_support.h"

namespace gym::report {
namespace {

using namespace telemetry;

namespace fs = std::filesystem;
namespace json = boost::json;

// ---- estimate_percentile ----

BucketHistogram histogram(std::vector<double> bounds, std::vector<std::uint64_t> counts,
                          std::optional<double> min, std::optional<double> max) {
  BucketHistogram h;
  h.bounds = std::move(bounds);
  h.bucket_counts = std::move(counts);
  for (auto c : h.bucket_counts) h.count += c;
  h.min = min;
  h.max = max;
  return h;
}

PercentileEstimate estimate(const BucketHistogram& h, double q) {
  auto p = estimate_percentile(h, q);
  EXPECT_TRUE(p.has_value());
  return p.value_or(PercentileEstimate{-1, false});
}

TEST(ReportPercentile, InterpolatesLinearlyInsideTheBucketHoldingTheRank) {
  // 10 samples: 1 in (0,100], 3 in (100,250], 2 in (250,500], 4 in (500,1000].
  auto h = histogram({100, 250, 500, 1000}, {1, 3, 2, 4, 0}, 50.0, 990.0);
  // Rank 5 lies in (250,500] with 4 samples below it: one of its two samples, halfway.
  EXPECT_EQ(estimate(h, 0.5), (PercentileEstimate{375, false}));
  // Rank 9 lies in (500,1000] with 6 below: 3 of its 4 samples, between 500 and the max of 990.
  EXPECT_DOUBLE_EQ(estimate(h, 0.9).value, 867.5);
  // Rank 2 lies in (100,250] with 1 below: one of its three samples.
  EXPECT_DOUBLE_EQ(estimate(h, 0.2).value, 150);
}

TEST(ReportPercentile, ARankOnABoundIsThatBound) {
  // Bounds are inclusive upper edges: rank 2 of 4 is the last sample of the first bucket.
  auto h = histogram({10, 20}, {2, 2, 0}, 0.0, 20.0);
  EXPECT_EQ(estimate(h, 0.5), (PercentileEstimate{10, false}));
  EXPECT_EQ(estimate(h, 1.0), (PercentileEstimate{20, false}));
}

TEST(ReportPercentile, SkipsEmptyBuckets) {
  auto h = histogram({1, 2, 3, 4}, {0, 2, 0, 0, 0}, 1.2, 1.8);
  // Rank 1 of 2: halfway through (1,2], inside [min, max].
  EXPECT_DOUBLE_EQ(estimate(h, 0.5).value, 1.5);
}

TEST(ReportPercentile, ASingleSampleIsEveryPercentile) {
  // One sample of 42 in (25,50]: interpolation says 37.5, the recorded min and max say 42.
  auto h = histogram({25, 50, 100}, {0, 1, 0, 0}, 42.0, 42.0);
  EXPECT_EQ(estimate(h, 0.5), (PercentileEstimate{42, false}));
  EXPECT_EQ(estimate(h, 0.99), (PercentileEstimate{42, false}));
}

TEST(ReportPercentile, TheFirstBucketStartsAtTheRecordedMinimumElseAtZero) {
  // Four samples in (0,100] between 20 and 80: rank 2 is halfway from 20 to 80.
  auto spread = histogram({100, 250}, {4, 0, 0}, 20.0, 80.0);
  EXPECT_EQ(estimate(spread, 0.5), (PercentileEstimate{50, false}));
  // Three samples in (0,100] between 90 and 99: rank 1.5 of 3 is halfway from 90 to 99, not 50.
  auto high = histogram({100, 250}, {3, 0, 0}, 90.0, 99.0);
  EXPECT_DOUBLE_EQ(estimate(high, 0.5).value, 94.5);
  EXPECT_DOUBLE_EQ(estimate(high, 0.99).value, 98.91);  // rank 2.97: 0.99 of [90, 99]
  // Without min and max the bucket is (0,100].
  auto unknown = histogram({100, 250}, {3, 0, 0}, std::nullopt, std::nullopt);
  EXPECT_EQ(estimate(unknown, 0.5), (PercentileEstimate{50, false}));
}

TEST(ReportPercentile, TheHighestBucketEndsAtTheRecordedMaximum) {
  // Two samples in (2500,5000] between 3000 and 4000: rank 1.98 is 0.99 of [3000, 4000].
  auto h = histogram({2500, 5000}, {0, 2, 0}, 3000.0, 4000.0);
  EXPECT_DOUBLE_EQ(estimate(h, 0.99).value, 3990);
  EXPECT_EQ(estimate(h, 1.0), (PercentileEstimate{4000, false}));
}

TEST(ReportPercentile, NeverLeavesTheRecordedRangeOnInconsistentInput) {
  // A min above the bucket holding the rank (not something an SDK writes): clamped to it.
  auto h = histogram({10, 20}, {1, 1, 0}, 15.0, 18.0);
  EXPECT_EQ(estimate(h, 0.5), (PercentileEstimate{15, false}));
}

TEST(ReportPercentile, TheFirstBucketStartsAtANegativeMinimum) {
  // (-4, -2] of the bucket (-inf, 0] holds both samples: rank 1 is halfway.
  auto h = histogram({0, 10}, {2, 0, 0}, -4.0, -2.0);
  EXPECT_EQ(estimate(h, 0.5), (PercentileEstimate{-3, false}));
  auto wide = histogram({0, 10}, {2, 0, 0}, -10.0, 0.0);
  EXPECT_EQ(estimate(wide, 0.5), (PercentileEstimate{-5, false}));
}

TEST(ReportPercentile, WithoutMinAndMaxOnlyTheBucketsCount) {
  auto h = histogram({100, 250}, {1, 1, 0}, std::nullopt, std::nullopt);
  EXPECT_EQ(estimate(h, 0.5), (PercentileEstimate{100, false}));
  EXPECT_EQ(estimate(h, 1.0), (PercentileEstimate{250, false}));
  EXPECT_EQ(estimate(h, 0.25), (PercentileEstimate{50, false}));
}

TEST(ReportPercentile, ARankInTheOverflowBucketReportsTheLastBoundAsALowerLimit) {
  auto h = histogram({1, 10}, {1, 1, 2}, 0.5, 70.0);
  EXPECT_EQ(estimate(h, 0.99), (PercentileEstimate{10, true}));
  EXPECT_EQ(estimate(h, 0.75), (PercentileEstimate{10, true}));
  // Rank 2 is the last sample of (1,10]: not in the overflow bucket.
  EXPECT_EQ(estimate(h, 0.5), (PercentileEstimate{10, false}));
  // Every sample above the last bound.
  auto all = histogram({1, 10}, {0, 0, 3}, 11.0, 12.0);
  EXPECT_EQ(estimate(all, 0.5), (PercentileEstimate{10, true}));
}

TEST(ReportPercentile, AnEmptyHistogramHasNoPercentile) {
  EXPECT_FALSE(estimate_percentile(histogram({1, 10}, {0, 0, 0}, std::nullopt, std::nullopt), 0.5));
  EXPECT_FALSE(estimate_percentile(BucketHistogram{}, 0.5));
  // Bucket counts that do not match the bounds are no histogram either.
  EXPECT_FALSE(estimate_percentile(histogram({1, 10}, {1, 1}, 0.5, 5.0), 0.5));
}

TEST(ReportPercentile, WithoutBoundsMinAndMaxAreTheBucket) {
  auto h = histogram({}, {4}, 10.0, 20.0);
  EXPECT_DOUBLE_EQ(estimate(h, 0.5).value, 15);
  EXPECT_FALSE(estimate_percentile(histogram({}, {4}, std::nullopt, std::nullopt), 0.5));
}

TEST(ReportPercentile, RejectsAQuantileOutsideZeroToOne) {
  auto h = histogram({1}, {1, 0}, 0.5, 0.5);
  EXPECT_THROW(estimate_percentile(h, 0), std::invalid_argument);
  EXPECT_THROW(estimate_percentile(h, 1.5), std::invalid_argument);
  EXPECT_THROW(estimate_percentile(h, -0.5), std::invalid_argument);
}

// ---- add_histogram ----

TEST(ReportHistogramSum, AddsBucketsCountsAndSumsAndCombinesExtremes) {
  BucketHistogram total;
  auto a = histogram({1, 10}, {1, 2, 0}, 0.5, 8.0);
  a.sum = 12;
  auto b = histogram({1, 10}, {0, 1, 1}, 3.0, 20.0);
  b.sum = 23;
  ASSERT_TRUE(add_histogram(total, a));
  ASSERT_TRUE(add_histogram(total, b));
  EXPECT_EQ(total.bucket_counts, (std::vector<std::uint64_t>{1, 3, 1}));
  EXPECT_EQ(total.count, 5u);
  EXPECT_DOUBLE_EQ(total.sum, 35);
  EXPECT_EQ(total.min, 0.5);
  EXPECT_EQ(total.max, 20.0);
}

TEST(ReportHistogramSum, AnExtremeIsUnknownWhenOnePartDoesNotKnowIt) {
  auto total = histogram({1}, {1, 0}, 0.5, 0.5);
  ASSERT_TRUE(add_histogram(total, histogram({1}, {1, 0}, std::nullopt, 0.7)));
  EXPECT_EQ(total.min, std::nullopt);
  EXPECT_EQ(total.max, 0.7);
  // An empty part changes no extreme.
  ASSERT_TRUE(add_histogram(total, histogram({1}, {0, 0}, std::nullopt, std::nullopt)));
  EXPECT_EQ(total.max, 0.7);
}

TEST(ReportHistogramSum, RefusesOtherBounds) {
  auto total = histogram({1, 10}, {1, 0, 0}, 0.5, 0.5);
  EXPECT_FALSE(add_histogram(total, histogram({1, 5}, {1, 0, 0}, 0.5, 0.5)));
  EXPECT_EQ(total.count, 1u);
}

// ---- a run written by real providers through console exporters ----

// docs/design/telemetry-contract.md#histogram-buckets, exactly (the facade must create these; the
// report must read them).
const std::vector<double> kRolloutBounds = {100,    250,    500,     1000,    2500,
                                            5000,   10000,  30000,   60000,   120000,
                                            300000, 600000, 1200000, 1800000, 3600000};
const std::vector<double> kVerifyBounds = {0.5, 1,   2.5,  5,    10,   25,    50,    100,
                                           250, 500, 1000, 2500, 5000, 10000, 30000, 60000};
const std::vector<double> kHttpBounds = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25,
                                         0.5,   0.75, 1,     2.5,  5,     7.5, 10};

constexpr std::int64_t kMiB = 1024 * 1024;
constexpr std::int64_t kGiB = 1024 * kMiB;

constexpr std::string_view kRunId = "4f2a91c0be31";

// One process of the run as the runtime sets it up: its resource (from build_resource), a provider,
// the gym_metrics facade of its role (which creates the instruments with their exact names, units
// and buckets), and its own console exporter appending to the run's shared file. Without a role it
// has only the bare provider.
class RunProcess {
 public:
  RunProcess(const std::string& path, const std::string& server, const std::string& type, long pid,
             std::optional<ProcessRole> role)
      : provider_(options(server, type, pid)), exporter_(path) {
    if (role) metrics_.emplace(provider_, *role);
  }

  MeterProvider& provider() { return provider_; }
  GymMetrics& metrics() { return *metrics_; }

  // `n` pool acquisitions towards `destination` (gym.http.connection_pool.connect_total).
  void connect(std::string_view destination, int n) {
    PoolDestination* d = metrics_->pool_destination(destination);
    for (int i = 0; i < n; ++i) d->acquisition_started();
  }
  void wait(std::string_view destination, QueueConstraint constraint, QueueOutcome outcome,
            double ms) {
    metrics_->pool_destination(destination)->wait_finished(constraint, outcome, ms);
  }
  // An empty route: no route matched (http.route omitted).
  void request(std::string_view route, int status, double seconds) {
    metrics_->http_request_series(route, route.empty() ? "GET" : "POST", status).record(seconds);
  }

  void export_now() {
    ASSERT_EQ(exporter_.export_metrics(provider_.collect(), std::chrono::steady_clock::now()),
              ExportResult::success);
  }

 private:
  static MeterProviderOptions options(const std::string& server, const std::string& type,
                                      long pid) {
    testing::FakeEnv env;
    auto settings = resolve_settings(boost::json::object{}, env.get());
    MeterProviderOptions o;
    o.resource = build_resource(settings, std::string(kRunId), {server, type}, env.get(),
                                HostFacts{"node-1", pid});
    return o;
  }

  MeterProvider provider_;
  std::optional<GymMetrics> metrics_;
  exporters::ConsoleExporter exporter_;
};

class TempFile {
 public:
  TempFile()
      : path_(fs::temp_directory_path() / ("gym-report-test-" + std::to_string(::getpid()) + "-" +
                                           std::to_string(next_++) + ".jsonl")) {}
  ~TempFile() { fs::remove(path_); }
  std::string path() const { return path_.string(); }
  void append(std::string_view line) const { std::ofstream(path_, std::ios::app) << line << '\n'; }

 private:
  static inline int next_ = 0;
  fs::path path_;
};

MemorySample::Target memory_target(const char* server, const char* type, long root_pid,
                                   std::int64_t processes, std::int64_t rss, std::int64_t rss_peak,
                                   std::optional<std::int64_t> pss,
                                   std::optional<std::int64_t> pss_peak) {
  return {MemoryTarget{server, type, root_pid}, TreeMemory{rss, pss, processes}, rss_peak,
          pss_peak};
}

// Writes the run: an orchestrator, an agent server with two workers, a resources server with
// two workers and a model server, exporting in an interleaved order, with log text, a span line
// and a truncated export between the exports.
void write_run(const TempFile& file) {
  const std::string path = file.path();
  RunProcess orchestrator(path, "orchestrator", "orchestrator", 100, ProcessRole::orchestrator);
  RunProcess agent_a(path, "mcqa_simple_agent", "responses_api_agents", 201,
                     ProcessRole::agent_server);
  RunProcess agent_b(path, "mcqa_simple_agent", "responses_api_agents", 202,
                     ProcessRole::agent_server);
  RunProcess mcqa_c(path, "mcqa", "resources_servers", 301, ProcessRole::resources_server);
  RunProcess mcqa_d(path, "mcqa", "resources_servers", 302, ProcessRole::resources_server);
  RunProcess model(path, "policy_model", "responses_api_models", 401, ProcessRole::model_server);

  // The orchestrator's memory gauges report whatever sample the sampler holds at collection.
  std::optional<MemorySample> latest_sample;
  orchestrator.metrics().observe_memory([&latest_sample] { return latest_sample; });

  file.append("[2025-01-01 10:00:00.000] [info] gym env start: starting 3 servers");
  orchestrator.connect("mcqa_simple_agent", 4);
  orchestrator.export_now();  // before the servers are up: no gym.servers.active yet

  for (double ms : {120.0, 180.0}) agent_a.metrics().record_rollout(ms);
  agent_a.request("/run", 200, 0.12);
  agent_a.request("/run", 200, 0.18);
  agent_a.connect("mcqa", 2);
  agent_a.connect("policy_model", 5);
  agent_a.export_now();  // superseded by the worker's later export

  file.append(R"({"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7",)"
              R"("parent_span_id":"","name":"POST /run","kind":2,"attributes":{}})");

  orchestrator.metrics().set_servers_active(3);
  latest_sample = MemorySample{HostMemory{32 * kGiB, 25 * kGiB, 7 * kGiB},
                               7 * kGiB,
                               {memory_target("mcqa", "resources_servers", 300, 3, 280 * kMiB,
                                              280 * kMiB, 190 * kMiB, 190 * kMiB)}};
  orchestrator.export_now();

  for (double ms : {90.0, 220.0, 600.0, 900.0, 4000.0}) agent_b.metrics().record_rollout(ms);
  for (double s : {0.09, 0.22, 0.6, 0.9, 4.0}) agent_b.request("/run", 200, s);
  agent_b.connect("mcqa", 5);
  agent_b.connect("policy_model", 8);
  agent_b.wait("policy_model", QueueConstraint::per_host, QueueOutcome::ok, 1.5);
  {
    // A line cut short (a process killed while writing): skipped, counted, not fatal.
    std::string line = exporters::otlp_json_text(agent_b.provider().collect());
    file.append(line.substr(0, line.size() / 2));
  }
  agent_b.export_now();

  // Worker C: 4 verifications, one whose verifier failed: success rate 0.75.
  for (double ms : {0.4, 2.0, 7.0}) mcqa_c.metrics().record_verify(ms, true);
  mcqa_c.metrics().record_verify(3.0, false);
  for (double s : {0.001, 0.002, 0.003}) mcqa_c.request("/verify", 200, s);
  mcqa_c.request("/verify", 500, 0.008);
  mcqa_c.export_now();

  for (double ms : {4.0, 8.0, 12.0, 45.0}) mcqa_d.metrics().record_verify(ms, true);
  for (double s : {0.002, 0.004, 0.006, 0.02}) mcqa_d.request("/verify", 200, s);
  mcqa_d.request("", 404, 0.0005);
  mcqa_d.export_now();

  for (double s : {0.2, 0.3, 12.0}) model.request("/v1/responses", 200, s);
  model.connect("external", 3);
  model.export_now();

  for (double ms : {300.0, 450.0, 700.0}) agent_a.metrics().record_rollout(ms);
  agent_a.request("/run", 200, 0.3);
  agent_a.request("/run", 200, 0.45);
  agent_a.request("/run", 500, 0.7);
  agent_a.connect("mcqa", 3);
  agent_a.connect("policy_model", 7);
  agent_a.wait("policy_model", QueueConstraint::per_host, QueueOutcome::ok, 3.0);
  agent_a.wait("policy_model", QueueConstraint::per_host, QueueOutcome::ok, 7.0);
  agent_a.wait("policy_model", QueueConstraint::total, QueueOutcome::abandoned, 40.0);
  agent_a.export_now();

  file.append("");
  // Span lines of two rollouts: a slow one (100 ms, mostly the model) and a fast one (10 ms).
  auto span = [&](std::string_view trace, std::string_view id, std::string_view parent,
                  std::string_view name, std::string_view kind, std::uint64_t start_ms,
                  std::uint64_t end_ms, std::string_view server, std::string_view url = {}) {
    file.append(fmt::format(
        R"({{"trace_id":"{}","span_id":"{}","parent_span_id":"{}","name":"{}","kind":"{}",)"
        R"("start_time_unix_nano":{},"end_time_unix_nano":{},"status":{{"code":"unset"}},)"
        R"("attributes":{{{}}},"events":[],"resource":{{"nemo.gym.server.name":"{}"}}}})",
        trace, id, parent, name, kind, start_ms * 1000000, end_ms * 1000000,
        url.empty() ? std::string() : fmt::format(R"("url.full":"{}")", url), server));
  };
  span("a1", "r", "", "gym.rollout", "internal", 0, 100, "agent");
  span("a1", "c1", "r", "HTTP POST", "client", 1, 81, "agent",
       "http://127.0.0.1:9001/v1/responses?api-version=1");
  span("a1", "s1", "c1", "POST /v1/responses", "server", 2, 80, "policy_model");
  span("a1", "m1", "s1", "gym.model.responses", "internal", 5, 75, "policy_model");
  span("a1", "c2", "r", "HTTP POST", "client", 82, 97, "agent", "http://127.0.0.1:9002/verify");
  span("a1", "s2", "c2", "POST /verify", "server", 83, 97, "resources");
  span("a1", "v2", "s2", "gym.verify", "internal", 84, 96, "resources");
  span("b2", "r", "", "gym.rollout", "internal", 0, 10, "agent");
  span("b2", "v", "r", "gym.verify", "internal", 1, 2, "resources");
  // Shutdown (docs/design/processes.md#shutdown-order): final memory sample, gym.servers.active =
  // 0, flush. The agent's tree had no PSS in that sample (so no pss point).
  orchestrator.connect("mcqa_simple_agent", 6);
  latest_sample = MemorySample{HostMemory{32 * kGiB, 24 * kGiB, 8 * kGiB},
                               9 * kGiB,
                               {memory_target("mcqa", "resources_servers", 300, 3, 300 * kMiB,
                                              320 * kMiB, 200 * kMiB, 210 * kMiB),
                                memory_target("mcqa_simple_agent", "responses_api_agents", 200, 3,
                                              3 * kGiB / 2, 2 * kGiB, std::nullopt, std::nullopt),
                                memory_target("policy_model", "responses_api_models", 400, 1,
                                              64 * kMiB, 64 * kMiB, 60 * kMiB, 60 * kMiB)}};
  orchestrator.metrics().set_servers_active(0);
  orchestrator.export_now();
}

TelemetryReport read_file(const TempFile& file) {
  std::ifstream in(file.path());
  return read_report(in, file.path());
}

class ReportOfARun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    file_ = new TempFile;
    write_run(*file_);
    report_ = new TelemetryReport(read_file(*file_));
  }
  static void TearDownTestSuite() {
    delete report_;
    delete file_;
  }
  const TelemetryReport& report() const { return *report_; }

  static inline TempFile* file_ = nullptr;
  static inline TelemetryReport* report_ = nullptr;
};

TEST_F(ReportOfARun, CountsExportsProcessesAndSkippedLines) {
  const ReportInput& in = report().input;
  EXPECT_EQ(in.exports, 9u);  // orchestrator 3, agent worker A 2, four more processes 1 each
  EXPECT_EQ(in.processes, 6u);
  EXPECT_EQ(in.lines, 21u);  // the empty line does not count
  EXPECT_EQ(in.span_lines, 9u);
  EXPECT_EQ(in.other_lines, 2u);  // the log line and the span line without its times
  EXPECT_EQ(in.malformed_lines, 1u);
  ASSERT_EQ(in.malformed_examples.size(), 1u);
  EXPECT_NE(in.malformed_examples[0].find(file_->path() + ":6: not valid JSON"), std::string::npos)
      << in.malformed_examples[0];
  EXPECT_TRUE(in.notes.empty());
}

TEST_F(ReportOfARun, ServersActiveLastIsTheLastExportAndPeakIsOverEveryExport) {
  ASSERT_EQ(report().servers.size(), 1u);
  const ServersActiveRow& s = report().servers[0];
  EXPECT_EQ(s.server, "orchestrator");
  EXPECT_EQ(s.instance_id, "4f2a91c0be31-orchestrator-100");
  EXPECT_EQ(s.pid, 100);
  EXPECT_EQ(s.last, 0);
  EXPECT_EQ(s.peak, 3);
  EXPECT_EQ(s.exports, 2u);  // the first export came before gym.servers.active was set
}

TEST_F(ReportOfARun, RolloutsSumTheLastExportOfEachWorker) {
  ASSERT_EQ(report().rollouts.size(), 1u);
  const RolloutRow& r = report().rollouts[0];
  EXPECT_EQ(r.server, "mcqa_simple_agent");
  EXPECT_EQ(r.processes, 2u);
  const BucketHistogram& h = r.duration_ms.histogram;
  // 5 + 5 samples; worker A's first export (2 samples) is superseded, not added.
  EXPECT_EQ(h.count, 10u);
  EXPECT_DOUBLE_EQ(h.sum, 7560);
  EXPECT_EQ(h.min, 90);
  EXPECT_EQ(h.max, 4000);
  EXPECT_EQ(h.bounds, kRolloutBounds);
  EXPECT_EQ(h.bucket_counts,
            (std::vector<std::uint64_t>{1, 3, 2, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  // Sorted: 90 | 120 180 220 | 300 450 | 600 700 900 | - | 4000.
  EXPECT_EQ(r.duration_ms.p50, (PercentileEstimate{375, false}));  // rank 5: half of (250,500]
  // Ranks 9.5 and 9.9 lie in (2500,5000], whose samples end at the max of 4000.
  ASSERT_TRUE(r.duration_ms.p95);
  EXPECT_DOUBLE_EQ(r.duration_ms.p95->value, 3250);
  ASSERT_TRUE(r.duration_ms.p99);
  EXPECT_DOUBLE_EQ(r.duration_ms.p99->value, 3850);
  EXPECT_FALSE(r.duration_ms.p99->above_last_bound);
}

TEST_F(ReportOfARun, VerificationSumsDurationsAndListsSuccessRatePerProcess) {
  ASSERT_EQ(report().verification.size(), 1u);
  const VerifyRow& v = report().verification[0];
  EXPECT_EQ(v.server, "mcqa");
  EXPECT_EQ(v.processes, 2u);
  ASSERT_TRUE(v.duration_ms);
  const DurationSummary& d = *v.duration_ms;
  EXPECT_EQ(d.histogram.count, 8u);
  EXPECT_EQ(d.histogram.bounds, kVerifyBounds);
  EXPECT_EQ(d.histogram.min, 0.4);
  EXPECT_EQ(d.histogram.max, 45);
  // Sorted: 0.4 | - | 2 | 3 4 | 7 8 | 12 | 45.
  EXPECT_EQ(d.p50, (PercentileEstimate{5, false}));  // rank 4: the top of (2.5,5]
  // Ranks 7.6 and 7.92 lie in (25,50], whose one sample is the max of 45: [25, 45].
  ASSERT_TRUE(d.p95);
  EXPECT_DOUBLE_EQ(d.p95->value, 37);
  ASSERT_TRUE(d.p99);
  EXPECT_DOUBLE_EQ(d.p99->value, 43.4);
  ASSERT_EQ(v.success_rates.size(), 2u);
  EXPECT_EQ(v.success_rates[0].pid, 301);
  EXPECT_EQ(v.success_rates[0].instance_id, "4f2a91c0be31-mcqa-301");
  EXPECT_EQ(v.success_rates[0].value, 0.75);
  EXPECT_EQ(v.success_rates[1].pid, 302);
  EXPECT_EQ(v.success_rates[1].value, 1.0);
}

TEST_F(ReportOfARun, HttpRowsPerServerAndRouteWithServerErrors) {
  const auto& rows = report().http;
  ASSERT_EQ(rows.size(), 4u);
  // Sorted by server, then route; the unmatched 404 has no route.
  EXPECT_EQ(rows[0].server, "mcqa");
  EXPECT_EQ(rows[0].route, "");
  EXPECT_EQ(rows[0].duration_s.histogram.count, 1u);
  EXPECT_EQ(rows[0].duration_s.p50, (PercentileEstimate{0.0005, false}));
  EXPECT_EQ(rows[0].server_errors, 0u);

  EXPECT_EQ(rows[1].route, "/verify");
  EXPECT_EQ(rows[1].duration_s.histogram.count, 8u);
  EXPECT_EQ(rows[1].server_errors, 1u);
  // Sorted: .001 .002 .002 .003 .004 | .006 .008 | .02.
  ASSERT_TRUE(rows[1].duration_s.p50);
  EXPECT_DOUBLE_EQ(rows[1].duration_s.p50->value, 0.0042);  // 4/5 of [min 0.001, 0.005]
  ASSERT_TRUE(rows[1].duration_s.p99);
  EXPECT_DOUBLE_EQ(rows[1].duration_s.p99->value, 0.0192);  // 0.92 of [0.01, max 0.02]

  EXPECT_EQ(rows[2].server, "mcqa_simple_agent");
  EXPECT_EQ(rows[2].route, "/run");
  EXPECT_EQ(rows[2].duration_s.histogram.count, 10u);
  EXPECT_EQ(rows[2].duration_s.histogram.bounds, kHttpBounds);
  EXPECT_EQ(rows[2].server_errors, 1u);
  ASSERT_TRUE(rows[2].duration_s.p50);
  EXPECT_DOUBLE_EQ(rows[2].duration_s.p50->value, 0.375);
  ASSERT_TRUE(rows[2].duration_s.p99);
  EXPECT_DOUBLE_EQ(rows[2].duration_s.p99->value, 3.85);  // 0.9 of [2.5, max 4]

  EXPECT_EQ(rows[3].server, "policy_model");
  EXPECT_EQ(rows[3].route, "/v1/responses");
  ASSERT_TRUE(rows[3].duration_s.p50);
  EXPECT_DOUBLE_EQ(rows[3].duration_s.p50->value, 0.375);
  EXPECT_EQ(rows[3].duration_s.p99, (PercentileEstimate{10, true}));  // 12 s: above 10 s
}

TEST_F(ReportOfARun, PoolRowsPerRecordingServerAndDestination) {
  const auto& rows = report().pool;
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].server, "mcqa_simple_agent");
  EXPECT_EQ(rows[0].destination, "mcqa");
  EXPECT_EQ(rows[0].connections, 10);  // 5 + 5
  EXPECT_EQ(rows[0].queued, 0u);
  EXPECT_EQ(rows[0].queued_share, 0.0);  // connect_total present, no wait sampled
  EXPECT_EQ(rows[0].queue_p99_ms, std::nullopt);
  EXPECT_EQ(rows[0].abandoned, 0u);

  EXPECT_EQ(rows[1].destination, "policy_model");
  EXPECT_EQ(rows[1].connections, 20);  // 12 + 8
  EXPECT_EQ(rows[1].queued, 4u);       // 3 waits in worker A, 1 in worker B
  EXPECT_EQ(rows[1].queued_share, 0.2);
  // Sorted: 1.5 | 3 | 7 | - | 40: rank 3.96 is 0.96 of [25, max 40].
  ASSERT_TRUE(rows[1].queue_p99_ms);
  EXPECT_DOUBLE_EQ(rows[1].queue_p99_ms->value, 39.4);
  EXPECT_EQ(rows[1].abandoned, 1u);

  EXPECT_EQ(rows[2].server, "orchestrator");
  EXPECT_EQ(rows[2].destination, "mcqa_simple_agent");
  EXPECT_EQ(rows[2].connections, 10);

  EXPECT_EQ(rows[3].server, "policy_model");
  EXPECT_EQ(rows[3].destination, "external");
  EXPECT_EQ(rows[3].connections, 3);
}

TEST_F(ReportOfARun, MemoryFromTheOrchestratorsLastExport) {
  const auto& rows = report().server_memory;
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].server, "mcqa");
  EXPECT_EQ(rows[0].server_type, "resources_servers");
  EXPECT_EQ(rows[0].root_pid, 300);
  EXPECT_EQ(rows[0].processes, 3);
  EXPECT_EQ(rows[0].rss_bytes, 300 * kMiB);
  EXPECT_EQ(rows[0].rss_peak_bytes, 320 * kMiB);
  EXPECT_EQ(rows[0].pss_bytes, 200 * kMiB);
  EXPECT_EQ(rows[0].pss_peak_bytes, 210 * kMiB);

  EXPECT_EQ(rows[1].server, "mcqa_simple_agent");
  EXPECT_EQ(rows[1].rss_bytes, 3 * kGiB / 2);
  EXPECT_EQ(rows[1].rss_peak_bytes, 2 * kGiB);
  EXPECT_EQ(rows[1].pss_bytes, std::nullopt);  // never sampled: not invented
  EXPECT_EQ(rows[1].pss_peak_bytes, std::nullopt);

  EXPECT_EQ(rows[2].server, "policy_model");
  EXPECT_EQ(rows[2].processes, 1);

  ASSERT_EQ(report().host_memory.size(), 1u);
  const HostMemoryRow& host = report().host_memory[0];
  EXPECT_EQ(host.host, "node-1");
  EXPECT_EQ(host.usage_bytes, 8 * kGiB);
  EXPECT_EQ(host.available_bytes, 24 * kGiB);
  EXPECT_EQ(host.total_bytes, 32 * kGiB);
  EXPECT_EQ(host.peak_bytes, 9 * kGiB);
}

// The cells of the table row that starts with `first_cell` in the section headed `section`,
// under the group line `group` when given (columns are at least two spaces apart; a cell such
// as "300.0 MiB" has one).
std::vector<std::string> row_cells(const std::string& text, std::string_view section,
                                   std::string_view first_cell, std::string_view group = {}) {
  std::istringstream in(text);
  std::string line;
  bool inside = false;
  std::string current_group;
  while (std::getline(in, line)) {
    if (line.rfind(section, 0) == 0) {
      inside = true;
      continue;
    }
    if (!inside) continue;
    if (line.empty()) break;
    std::vector<std::string> cells;
    const std::size_t indent = line.find_first_not_of(' ');
    std::size_t i = indent;
    while (i != std::string::npos) {
      std::size_t end = line.find("  ", i);
      cells.push_back(line.substr(i, end == std::string::npos ? end : end - i));
      i = end == std::string::npos ? end : line.find_first_not_of(' ', end);
    }
    if (indent == 2 && cells.size() == 1) {
      current_group = cells[0];
      continue;
    }
    if (!cells.empty() && cells[0] == first_cell && (group.empty() || group == current_group)) {
      return cells;
    }
  }
  return {};
}

using Cells = std::vector<std::string>;

// Where the slowest rollouts spent their time: the spans inside the rollouts at or above p90.
TEST_F(ReportOfARun, TracesShowWhereTheSlowestRolloutsSpentTheirTime) {
  const TraceSection& t = report().traces;
  EXPECT_EQ(t.spans, 9u);
  EXPECT_EQ(t.traces, 2u);
  EXPECT_EQ(t.rollouts, 2u);
  EXPECT_EQ(t.slow_rollouts, 1u);  // p90 of {10, 100} ms is 100 ms
  ASSERT_TRUE(t.rollout_p50_ms && t.slow_threshold_ms);
  EXPECT_DOUBLE_EQ(*t.rollout_p50_ms, 10.0);
  EXPECT_DOUBLE_EQ(*t.slow_threshold_ms, 100.0);
  std::map<std::string, SpanTimeRow> rows;
  for (const auto& r : t.rows) rows[r.name] = r;
  ASSERT_EQ(rows.size(), 6u);  // only what ran inside the slow one
  // Each call has its row, named by the path it called (no query) and the server that answered.
  const std::string to_model = "HTTP POST /v1/responses -> policy_model";
  const std::string to_verify = "HTTP POST /verify -> resources";
  ASSERT_TRUE(rows.count(to_model) && rows.count(to_verify));
  EXPECT_EQ(rows[to_model].count, 1u);
  EXPECT_DOUBLE_EQ(rows[to_model].p50_ms, 80.0);
  EXPECT_NEAR(rows[to_model].share, 0.80, 1e-9);
  EXPECT_EQ(rows[to_model].server, "agent");
  EXPECT_NEAR(rows[to_verify].share, 0.15, 1e-9);
  EXPECT_NEAR(rows["gym.model.responses"].share, 0.70, 1e-9);
  EXPECT_EQ(rows["gym.model.responses"].server, "policy_model");
  EXPECT_NEAR(rows["gym.verify"].share, 0.12, 1e-9);
  EXPECT_EQ(rows["gym.verify"].count, 1u);   // the fast rollout's is not among them
  EXPECT_EQ(t.rows.front().name, to_model);  // largest share first
  const std::string text = format_report(report());
  EXPECT_NE(text.find("the slowest 1 (>= p90, 100 ms) spent it in:"), std::string::npos) << text;
  EXPECT_EQ(
      row_cells(text, "traces", "gym.model.responses"),
      (Cells{"gym.model.responses", "internal", "policy_model", "1", "70.0", "70.0", "70.0%"}));
}

TEST_F(ReportOfARun, FormatsEverySectionInOrder) {
  const std::string text = format_report(report());
  std::size_t at = 0;
  for (std::string_view header :
       {"telemetry report: 9 metrics exports from 6 processes", "spans: 9 span lines",
        "input: 21 lines read; skipped 2 not metrics or spans, 1 malformed",
        "servers (gym.servers.active)", "rollouts (gym.rollout.duration_ms)",
        "verification (gym.verify.duration_ms, gym.verify.success_rate)",
        "http (http.server.request.duration)", "connection pool (gym.http.connection_pool.*)",
        "memory (gym.server.memory.*", "traces: 9 spans in 2 traces, 2 rollouts"}) {
    std::size_t found = text.find(header, at);
    ASSERT_NE(found, std::string::npos) << header << "\n" << text;
    at = found;
  }
  EXPECT_EQ(row_cells(text, "servers", "orchestrator"),
            (Cells{"orchestrator", "100", "0", "3", "2"}));
  EXPECT_EQ(row_cells(text, "rollouts", "mcqa_simple_agent"),
            (Cells{"mcqa_simple_agent", "2", "10", "375", "3250", "3850"}));
  EXPECT_EQ(row_cells(text, "verification", "mcqa"),
            (Cells{"mcqa", "2", "8", "5.00", "37.0", "43.4", "301 0.750, 302 1.000"}));
  EXPECT_EQ(row_cells(text, "http", "/v1/responses", "policy_model"),
            (Cells{"/v1/responses", "3", "375", ">10000", "0"}));
  EXPECT_EQ(row_cells(text, "http", "/verify", "mcqa"),
            (Cells{"/verify", "8", "4.20", "19.2", "1"}));
  EXPECT_EQ(row_cells(text, "http", "(no route)", "mcqa"),
            (Cells{"(no route)", "1", "0.500", "0.500", "0"}));
  EXPECT_EQ(row_cells(text, "connection pool", "mcqa_simple_agent", "orchestrator"),
            (Cells{"mcqa_simple_agent", "10", "0", "0.0%", "-", "0"}));
  EXPECT_EQ(row_cells(text, "connection pool", "policy_model", "mcqa_simple_agent"),
            (Cells{"policy_model", "20", "4", "20.0%", "39.4", "1"}));
  EXPECT_EQ(row_cells(text, "memory", "mcqa"),
            (Cells{"mcqa", "300", "3", "300.0 MiB", "320.0 MiB", "200.0 MiB", "210.0 MiB"}));
  EXPECT_EQ(row_cells(text, "memory", "mcqa_simple_agent"),
            (Cells{"mcqa_simple_agent", "200", "3", "1.5 GiB", "2.0 GiB", "-", "-"}));
  EXPECT_NE(text.find("  host node-1: usage 8.0 GiB, available 24.0 GiB, total 32.0 GiB, "
                      "sampled peak 9.0 GiB\n"),
            std::string::npos);
  EXPECT_EQ(text.find("no data"), std::string::npos);
  // Terminal width: no line beyond 100 columns.
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
}

TEST_F(ReportOfARun, JsonCarriesTheSameFigures) {
  json::value v = report_json(report());
  EXPECT_EQ(v.at("input").at("exports").as_uint64(), 9u);
  EXPECT_EQ(v.at("servers").at(0).at("peak").as_int64(), 3);
  const auto& rollout = v.at("rollouts").at(0);
  EXPECT_EQ(rollout.at("server").as_string(), "mcqa_simple_agent");
  EXPECT_EQ(rollout.at("count").as_uint64(), 10u);
  EXPECT_EQ(rollout.at("p50_ms").at("value").as_double(), 375);
  const auto& model = v.at("http").at(3);
  EXPECT_EQ(model.at("p99_ms").at("value").as_double(), 10000);
  EXPECT_TRUE(model.at("p99_ms").at("above_last_bound").as_bool());
  EXPECT_TRUE(v.at("http").at(0).at("route").is_null());
  const auto& pool = v.at("connection_pool").at(1);
  EXPECT_EQ(pool.at("queued_share").as_double(), 0.2);
  EXPECT_TRUE(v.at("connection_pool").at(0).at("queue_p99_ms").is_null());
  EXPECT_TRUE(v.at("memory").at("servers").at(1).at("pss_bytes").is_null());
  EXPECT_EQ(v.at("memory").at("hosts").at(0).at("total_bytes").as_int64(), 32 * kGiB);
}

// ---- sections without data, odd lines ----

TEST(ReportFormat, SectionsWithoutDataSayNoDataInOrder) {
  TempFile file;
  {
    RunProcess model(file.path(), "policy_model", "responses_api_models", 401,
                     ProcessRole::model_server);
    model.request("/v1/responses", 200, 0.2);
    model.export_now();
  }
  const std::string text = format_report(read_file(file));
  std::size_t at = 0;
  for (std::string_view line : {"servers: no data\n", "rollouts: no data\n",
                                "verification: no data\n", "http (http.server.request.duration)\n",
                                "connection pool: no data\n", "memory: no data\n"}) {
    std::size_t found = text.find(line, at);
    ASSERT_NE(found, std::string::npos) << line << "\n" << text;
    at = found;
  }
  // The one sample is every percentile.
  EXPECT_EQ(row_cells(text, "http", "/v1/responses", "policy_model"),
            (Cells{"/v1/responses", "1", "200", "200", "0"}));
}

TEST(ReportFormat, APeakOfZeroSaysNoExportSawTheServersRunning) {
  TempFile file;
  {
    // A run shorter than the export interval: the servers were counted and reset to 0 before
    // the only export, the shutdown flush.
    RunProcess orchestrator(file.path(), "orchestrator", "orchestrator", 100,
                            ProcessRole::orchestrator);
    orchestrator.metrics().set_servers_active(3);
    orchestrator.metrics().set_servers_active(0);
    orchestrator.export_now();
  }
  TelemetryReport r = read_file(file);
  ASSERT_EQ(r.servers.size(), 1u);
  EXPECT_EQ(r.servers[0].peak, 0);
  EXPECT_EQ(r.servers[0].exports, 1u);
  EXPECT_NE(format_report(r).find("  peak 0: no export saw the servers running"),
            std::string::npos);
}

TEST(ReportFormat, AnInputWithoutExportsHasNoDataAnywhere) {
  std::istringstream in("just a log line\n\n{\"trace_id\":\"ab\"}\n");
  TelemetryReport r = read_report(in);
  EXPECT_EQ(r.input.exports, 0u);
  EXPECT_EQ(r.input.lines, 2u);
  EXPECT_EQ(r.input.other_lines, 2u);
  const std::string text = format_report(r);
  EXPECT_EQ(text.rfind("telemetry report: 0 metrics exports from 0 processes\n"
                       "input: 2 lines read; skipped 2 not metrics or spans\n",
                       0),
            0u)
      << text;
  for (std::string_view section :
       {"servers", "rollouts", "verification", "http", "connection pool", "memory"}) {
    EXPECT_NE(text.find(std::string(section) + ": no data\n"), std::string::npos) << section;
  }
}

TEST(ReportReading, AcceptsAPrefixBeforeTheJsonAndPlainNumbers) {
  // The orchestrator prints `(server) ` before each line of a child on the terminal; a writer
  // other than gym-cpp may use plain JSON numbers for 64-bit integers.
  std::istringstream in(
      R"((mcqa) {"resourceMetrics":[{"resource":{"attributes":[)"
      R"({"key":"service.instance.id","value":{"stringValue":"r-mcqa-7"}},)"
      R"({"key":"nemo.gym.server.name","value":{"stringValue":"mcqa"}},)"
      R"({"key":"process.pid","value":{"intValue":7}}]},)"
      R"("scopeMetrics":[{"metrics":[{"name":"gym.verify.duration_ms","unit":"ms",)"
      R"("histogram":{"dataPoints":[{"count":2,"sum":3.0,"min":1.0,"max":2.0,)"
      R"("bucketCounts":[0,2,0],"explicitBounds":[0.5,2.5]}]}},)"
      R"({"name":"gym.verify.success_rate","unit":"",)"
      R"("gauge":{"dataPoints":[{"asDouble":0.5}]}}]}]}]})"
      "\n");
  TelemetryReport r = read_report(in);
  EXPECT_EQ(r.input.exports, 1u);
  ASSERT_EQ(r.verification.size(), 1u);
  EXPECT_EQ(r.verification[0].duration_ms->histogram.count, 2u);
  EXPECT_DOUBLE_EQ(r.verification[0].duration_ms->p50->value, 1.5);
  ASSERT_EQ(r.verification[0].success_rates.size(), 1u);
  EXPECT_EQ(r.verification[0].success_rates[0].pid, 7);
}

TEST(ReportReading, MalformedExportsAreCountedWithTheirReason) {
  std::istringstream in(
      // Bucket counts that do not match the bounds.
      R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"x","histogram":)"
      R"({"dataPoints":[{"count":"1","bucketCounts":["1"],"explicitBounds":[1.0]}]}}]}]}]})"
      "\n"
      // resourceMetrics of the wrong type.
      R"({"resourceMetrics":5})"
      "\n"
      // A span whose attribute mentions the word: not an export.
      R"({"trace_id":"ab","attributes":{"note":"resourceMetrics"}})"
      "\n");
  TelemetryReport r = read_report(in, "run.jsonl");
  EXPECT_EQ(r.input.exports, 0u);
  EXPECT_EQ(r.input.malformed_lines, 2u);
  EXPECT_EQ(r.input.other_lines, 1u);
  ASSERT_EQ(r.input.malformed_examples.size(), 2u);
  EXPECT_EQ(r.input.malformed_examples[0],
            "run.jsonl:1: a histogram point has 1 bucket counts for 1 bounds");
  EXPECT_EQ(r.input.malformed_examples[1],
            "run.jsonl:2: resourceMetrics of the request is not an array");
}

TEST(ReportReading, SeveralSourcesAndTheLastExportOfAProcessWins) {
  TempFile first;
  TempFile second;
  {
    RunProcess a(first.path(), "mcqa_simple_agent", "responses_api_agents", 201,
                 ProcessRole::agent_server);
    a.metrics().record_rollout(150);
    a.export_now();
    // The same process (same service.instance.id) later, in another file.
    RunProcess later(second.path(), "mcqa_simple_agent", "responses_api_agents", 201,
                     ProcessRole::agent_server);
    later.metrics().record_rollout(150);
    later.metrics().record_rollout(160);
    later.export_now();
  }
  ReportReader reader;
  std::ifstream in1(first.path());
  std::ifstream in2(second.path());
  reader.add_stream(in1, first.path());
  reader.add_stream(in2, second.path());
  TelemetryReport r = reader.build();
  EXPECT_EQ(r.input.exports, 2u);
  EXPECT_EQ(r.input.processes, 1u);
  ASSERT_EQ(r.rollouts.size(), 1u);
  EXPECT_EQ(r.rollouts[0].duration_ms.histogram.count, 2u);
}

TEST(ReportReading, WorkersWithOtherBoundsAreLeftOutWithANote) {
  TempFile file;
  {
    // Not something gym_metrics writes: bare providers with hand-made instruments.
    RunProcess a(file.path(), "mcqa", "resources_servers", 301, std::nullopt);
    RunProcess b(file.path(), "mcqa", "resources_servers", 302, std::nullopt);
    a.provider().create_histogram("gym.verify.duration_ms", "ms", "", kVerifyBounds).record(3);
    b.provider().create_histogram("gym.verify.duration_ms", "ms", "", {1, 2}).record(1.5);
    a.export_now();
    b.export_now();
  }
  TelemetryReport r = read_file(file);
  ASSERT_EQ(r.verification.size(), 1u);
  EXPECT_EQ(r.verification[0].duration_ms->histogram.count, 1u);
  ASSERT_EQ(r.input.notes.size(), 1u);
  EXPECT_EQ(r.input.notes[0], "mcqa: a point with other bucket bounds was left out");
}

}  // namespace
}  // namespace gym::report
