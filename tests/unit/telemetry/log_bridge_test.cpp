// The log bridge (docs/reference/telemetry.md#logs): spdlog records at INFO and above become log
// records with their severity, body and (inside a ScopedLogTrace) the span's ids; below INFO
// nothing; after shutdown nothing; a full queue drops without blocking or feeding its own warning
// back in.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "telemetry/logs/log_bridge.h"
#include "telemetry/traces/trace_context.h"

namespace gym::telemetry {
namespace {

using namespace std::chrono_literals;

class Recording final : public LogExporter {
 public:
  explicit Recording(std::vector<LogRecordData>* out, std::mutex* mu) : out_(out), mu_(mu) {}
  ExportResult export_batch(std::span<const LogRecordData> records, Deadline) noexcept override {
    std::lock_guard lock(*mu_);
    out_->insert(out_->end(), records.begin(), records.end());
    return ExportResult::success;
  }

 private:
  std::vector<LogRecordData>* out_;
  std::mutex* mu_;
};

BatchSettings quick() {
  BatchSettings s;
  s.schedule_delay = 20ms;
  return s;
}

TEST(LogBridge, InfoAndAboveBecomeRecordsWithTheActiveSpansIds) {
  std::vector<LogRecordData> got;
  std::mutex mu;
  const auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::debug);
  {
    LogBridge bridge(std::make_unique<Recording>(&got, &mu), quick(), 10s);
    spdlog::debug("not exported");
    spdlog::info("plain {}", 1);
    auto span = *parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    {
      ScopedLogTrace scope(span);
      spdlog::warn("inside the span");
    }
    spdlog::error("after the span");
    ASSERT_TRUE(bridge.force_flush(5s));
    ASSERT_TRUE(bridge.shutdown(5s));
    spdlog::error("after shutdown");
  }
  spdlog::set_level(level);
  std::lock_guard lock(mu);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].body, "plain 1");
  EXPECT_EQ(got[0].severity_number, 9);
  EXPECT_EQ(got[0].severity_text, "INFO");
  EXPECT_TRUE(is_zero(got[0].trace_id));
  EXPECT_EQ(got[1].body, "inside the span");
  EXPECT_EQ(got[1].severity_number, 13);
  EXPECT_EQ(to_hex(got[1].trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(to_hex(got[1].span_id), "00f067aa0ba902b7");
  EXPECT_TRUE(got[1].sampled);
  EXPECT_EQ(got[2].severity_text, "ERROR");
  EXPECT_TRUE(is_zero(got[2].span_id));
  EXPECT_GT(got[2].time_unix_nano, 0u);
}

// Never exports: the queue fills.
class Stuck final : public LogExporter {
 public:
  ExportResult export_batch(std::span<const LogRecordData>, Deadline deadline) noexcept override {
    std::unique_lock lock(mu);
    cv.wait_until(lock, deadline, [&] { return released; });
    return ExportResult::failure;
  }
  void shutdown(Deadline) noexcept override {
    std::lock_guard lock(mu);
    released = true;
    cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
};

TEST(LogBridge, AFullQueueDropsWithoutBlockingTheLogger) {
  BatchSettings s;
  s.max_queue_size = 4;
  s.max_export_batch_size = 2;
  s.schedule_delay = 5ms;
  LogBridge bridge(std::make_unique<Stuck>(), s, 10s);
  // The drop warning itself is logged through spdlog: it must not come back into the queue
  // (nor deadlock on the sink).
  for (int i = 0; i < 200; ++i) spdlog::info("line {}", i);
  const auto stats = bridge.stats();
  EXPECT_GT(stats.dropped_full, 150u);
  EXPECT_LE(stats.dropped_full, 200u);
  bridge.shutdown(200ms);
}

TEST(LogSeverity, SpdlogLevelsMapToOtlpSeverities) {
  EXPECT_EQ(severity_number(spdlog::level::trace), 0);
  EXPECT_EQ(severity_number(spdlog::level::debug), 0);
  EXPECT_EQ(severity_number(spdlog::level::info), 9);
  EXPECT_EQ(severity_number(spdlog::level::warn), 13);
  EXPECT_EQ(severity_number(spdlog::level::err), 17);
  EXPECT_EQ(severity_number(spdlog::level::critical), 21);
  EXPECT_STREQ(severity_text(spdlog::level::critical), "FATAL");
}

}  // namespace
}  // namespace gym::telemetry
