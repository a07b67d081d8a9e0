// OTLP/JSON encoding and the periodic reader.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <boost/json.hpp>

#include "telemetry/export/otlp_json.h"
#include "telemetry/export/periodic_reader.h"
#include "telemetry/metrics/meter_provider.h"
#include "telemetry_test_support.h"

namespace gym::telemetry {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// Every kind of instrument with known values.
void record_known_values(MeterProvider& p) {
  p.create_counter<std::int64_t>("t.counter", "{request}", "requests")
      .add(5, {{"route", "/run"}, {"ok", true}});
  p.create_up_down_counter<std::int64_t>("t.updown", "{request}").add(-2);
  p.create_gauge<double>("t.gauge").record(0.75, {{"ratio", 0.5}, {"n", 3}});
  auto h = p.create_histogram("t.hist", "ms", "durations", {1, 10});
  h.record(0.5);
  h.record(10);
  h.record(11);
  p.create_observable_counter<std::int64_t>("t.ocounter", "{connection}", "",
                                            [](ObservableResult<std::int64_t>& r) {
                                              r.observe(42, {{"dest", "model"}});
                                            });
  p.create_observable_gauge<double>("t.ogauge", "By", "",
                                    [](ObservableResult<double>& r) { r.observe(2.5); });
}

const json::object& metric_named(const json::value& request, std::string_view name) {
  for (const auto& m :
       request.at("resourceMetrics").at(0).at("scopeMetrics").at(0).at("metrics").as_array()) {
    if (m.at("name").as_string() == name) return m.as_object();
  }
  throw std::runtime_error("no metric " + std::string(name));
}

TEST(OtlpJson, EncodesEveryKindInTheOtlpJsonMapping) {
  MeterProviderOptions o;
  o.resource.attributes = AttributeSet{{"service.name", "svc"}, {"process.pid", 7}};
  MeterProvider p(o);
  record_known_values(p);
  auto snapshot = p.collect();
  json::value v = json::parse(otlp_json_text(snapshot));

  const auto& rm = v.at("resourceMetrics").at(0);
  const auto& res = rm.at("resource").at("attributes").as_array();
  ASSERT_EQ(res.size(), 2u);
  EXPECT_EQ(res[0].at("key").as_string(), "process.pid");
  EXPECT_EQ(res[0].at("value").at("intValue").as_string(), "7");
  EXPECT_EQ(res[1].at("value").at("stringValue").as_string(), "svc");
  EXPECT_EQ(rm.at("scopeMetrics").at(0).at("scope").at("name").as_string(), "gym-cpp");
  EXPECT_EQ(rm.at("scopeMetrics").at(0).at("scope").at("version").as_string(), GYM_VERSION);

  const auto& counter = metric_named(v, "t.counter");
  EXPECT_EQ(counter.at("unit").as_string(), "{request}");
  EXPECT_EQ(counter.at("description").as_string(), "requests");
  const auto& sum = counter.at("sum");
  EXPECT_EQ(sum.at("aggregationTemporality").as_int64(), 2);
  EXPECT_EQ(sum.at("isMonotonic").as_bool(), true);
  const auto& cp = sum.at("dataPoints").at(0);
  EXPECT_EQ(cp.at("asInt").as_string(), "5");
  EXPECT_EQ(cp.at("startTimeUnixNano").as_string(),
            std::to_string(snapshot.metrics[0].start_time_unix_nano));
  EXPECT_EQ(cp.at("timeUnixNano").as_string(), std::to_string(snapshot.metrics[0].time_unix_nano));
  const auto& attrs = cp.at("attributes").as_array();
  ASSERT_EQ(attrs.size(), 2u);
  EXPECT_EQ(attrs[0].at("key").as_string(), "ok");
  EXPECT_EQ(attrs[0].at("value").at("boolValue").as_bool(), true);
  EXPECT_EQ(attrs[1].at("value").at("stringValue").as_string(), "/run");

  const auto& updown = metric_named(v, "t.updown").at("sum");
  EXPECT_EQ(updown.at("isMonotonic").as_bool(), false);
  EXPECT_EQ(updown.at("dataPoints").at(0).at("asInt").as_string(), "-2");

  const auto& gauge = metric_named(v, "t.gauge").at("gauge").at("dataPoints").at(0);
  EXPECT_EQ(gauge.at("asDouble").as_double(), 0.75);
  EXPECT_FALSE(gauge.as_object().contains("startTimeUnixNano"));
  EXPECT_EQ(gauge.at("attributes").at(0).at("value").at("intValue").as_string(), "3");
  EXPECT_EQ(gauge.at("attributes").at(1).at("value").at("doubleValue").as_double(), 0.5);

  const auto& hist = metric_named(v, "t.hist").at("histogram");
  EXPECT_EQ(hist.at("aggregationTemporality").as_int64(), 2);
  const auto& hp = hist.at("dataPoints").at(0);
  EXPECT_EQ(hp.at("count").as_string(), "3");
  EXPECT_EQ(hp.at("sum").as_double(), 21.5);
  EXPECT_EQ(hp.at("min").as_double(), 0.5);
  EXPECT_EQ(hp.at("max").as_double(), 11.0);
  EXPECT_EQ(hp.at("bucketCounts"), (json::array{"1", "1", "1"}));
  EXPECT_EQ(hp.at("explicitBounds"), (json::array{1.0, 10.0}));

  const auto& oc = metric_named(v, "t.ocounter").at("sum");
  EXPECT_EQ(oc.at("isMonotonic").as_bool(), true);
  EXPECT_EQ(oc.at("dataPoints").at(0).at("asInt").as_string(), "42");
  const auto& og = metric_named(v, "t.ogauge").at("gauge");
  EXPECT_EQ(og.at("dataPoints").at(0).at("asDouble").as_double(), 2.5);
}

TEST(OtlpJson, OneCompactLine) {
  MeterProvider p;
  record_known_values(p);
  std::string text = otlp_json_text(p.collect());
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_EQ(text.find(": "), std::string::npos);
  EXPECT_EQ(text.rfind("{\"resourceMetrics\":[", 0), 0u) << text.substr(0, 40);
}

// Captures snapshots; can be made to block until released.
class CapturingExporter : public MetricExporter {
 public:
  struct Shared {
    std::mutex m;
    std::condition_variable cv;
    std::vector<MetricsSnapshot> snapshots;
    bool block = false;
    bool shut_down = false;
  };
  explicit CapturingExporter(std::shared_ptr<Shared> s) : s_(std::move(s)) {}
  ExportResult export_metrics(const MetricsSnapshot& snapshot, Deadline) noexcept override {
    std::unique_lock lock(s_->m);
    s_->snapshots.push_back(snapshot);
    s_->cv.notify_all();
    s_->cv.wait(lock, [&] { return !s_->block; });
    return ExportResult::success;
  }
  void shutdown(Deadline) noexcept override {
    std::lock_guard lock(s_->m);
    s_->shut_down = true;
  }

 private:
  std::shared_ptr<Shared> s_;
};

TEST(PeriodicReader, ExportsEveryInterval) {
  MeterProvider provider;
  provider.create_counter<std::int64_t>("t.c").add(1);
  auto shared = std::make_shared<CapturingExporter::Shared>();
  PeriodicReader reader(provider, std::make_unique<CapturingExporter>(shared), {10ms, 10ms});
  {
    std::unique_lock lock(shared->m);
    ASSERT_TRUE(shared->cv.wait_for(lock, 30s, [&] { return shared->snapshots.size() >= 3; }));
  }
  EXPECT_TRUE(reader.shutdown());
  std::lock_guard lock(shared->m);
  EXPECT_TRUE(shared->shut_down);
  for (const auto& s : shared->snapshots) {
    EXPECT_EQ(testing::int_value(s, "t.c"), 1);
  }
}

TEST(PeriodicReader, NothingToExportSkipsTheExporter) {
  MeterProvider provider;
  EXPECT_TRUE(provider.create_counter<std::int64_t>("t.unused"));
  auto shared = std::make_shared<CapturingExporter::Shared>();
  PeriodicReader reader(provider, std::make_unique<CapturingExporter>(shared), {1h, 1h});
  EXPECT_TRUE(reader.force_flush());
  EXPECT_EQ(reader.stats().exports, 0u);
  EXPECT_TRUE(reader.shutdown());
  EXPECT_TRUE(shared->snapshots.empty());
}

TEST(PeriodicReader, ShutdownIsBoundedWhenTheExporterHangs) {
  MeterProvider provider;
  provider.create_counter<std::int64_t>("t.c").add(1);
  auto shared = std::make_shared<CapturingExporter::Shared>();
  shared->block = true;
  {
    PeriodicReader reader(provider, std::make_unique<CapturingExporter>(shared), {1h, 1h});
    auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(reader.force_flush(50ms));
    EXPECT_FALSE(reader.shutdown(100ms));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
    EXPECT_FALSE(reader.shutdown(100ms));  // idempotent
    EXPECT_FALSE(reader.force_flush(10ms));
    // The abandoned export's data is dropped: counted as a failed export.
    EXPECT_EQ(reader.stats().exports, 1u);
    EXPECT_EQ(reader.stats().failures, 1u);
  }
  // Release the abandoned export; the detached thread then ends on its own.
  std::lock_guard lock(shared->m);
  shared->block = false;
  shared->cv.notify_all();
}

// Honours its deadline: waits for it, then fails (a collector that never answers).
class DeadlineExporter : public MetricExporter {
 public:
  struct Shared {
    std::mutex m;
    Deadline export_deadline{};
    Deadline shutdown_deadline{};
  };
  explicit DeadlineExporter(std::shared_ptr<Shared> s) : s_(std::move(s)) {}
  ExportResult export_metrics(const MetricsSnapshot&, Deadline deadline) noexcept override {
    {
      std::lock_guard lock(s_->m);
      s_->export_deadline = deadline;
    }
    std::this_thread::sleep_until(deadline);
    return ExportResult::failure;
  }
  void shutdown(Deadline deadline) noexcept override {
    std::lock_guard lock(s_->m);
    s_->shutdown_deadline = deadline;
  }

 private:
  std::shared_ptr<Shared> s_;
};

TEST(PeriodicReader, ShutdownLeavesTheExporterTimeToGiveUpWithinTheBound) {
  MeterProvider provider;
  provider.create_counter<std::int64_t>("t.c").add(1);
  auto shared = std::make_shared<DeadlineExporter::Shared>();
  PeriodicReader reader(provider, std::make_unique<DeadlineExporter>(shared), {1h, 1h});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(reader.shutdown(1000ms));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 1000ms + 200ms);
  std::lock_guard lock(shared->m);
  // The export got the bound less 5 %; the exporter's shutdown the whole bound. The export ran
  // to its deadline, was counted, and the thread finished in time (nothing abandoned).
  EXPECT_LE(shared->export_deadline, start + 950ms + 50ms);
  EXPECT_GE(shared->export_deadline, start + 950ms - 50ms);
  EXPECT_GT(shared->shutdown_deadline, shared->export_deadline);
  EXPECT_EQ(reader.stats().exports, 1u);
  EXPECT_EQ(reader.stats().failures, 1u);
}

TEST(PeriodicReader, RejectsBadOptions) {
  MeterProvider provider;
  auto exporter = [] {
    return std::make_unique<CapturingExporter>(std::make_shared<CapturingExporter::Shared>());
  };
  EXPECT_THROW(PeriodicReader(provider, exporter(), {1000ms, 2000ms}), std::invalid_argument);
  EXPECT_THROW(PeriodicReader(provider, exporter(), {0ms, 0ms}), std::invalid_argument);
  EXPECT_THROW(PeriodicReader(provider, nullptr, {1000ms, 1000ms}), std::invalid_argument);
}

}  // namespace
}  // namespace gym::telemetry
