// The periodic reader.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "telemetry/metrics/meter_provider.h"
#include "telemetry/metrics/periodic_reader.h"
#include "telemetry_test_support.h"

namespace gym::telemetry {
namespace {

using namespace std::chrono_literals;

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
