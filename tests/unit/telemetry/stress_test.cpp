// Several threads record while another collects repeatedly; the totals are exact at the end and
// cumulative values never decrease between collections.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "telemetry/metrics/meter_provider.h"
#include "telemetry_test_support.h"

namespace gym::telemetry {
namespace {

using testing::find_histogram_point;
using testing::find_metric;
using testing::find_point;
using testing::int_value;

TEST(Stress, ConcurrentRecordingAndCollectionGiveExactTotals) {
  constexpr int kThreads = 4;
  constexpr int kIterations = 20000;
  constexpr int kSets = 50;  // each thread also creates new attribute sets while others record
  MeterProvider provider;
  auto counter = provider.create_counter<std::int64_t>("stress.counter");
  auto dcounter = provider.create_counter<double>("stress.double");
  auto updown = provider.create_up_down_counter<std::int64_t>("stress.updown");
  auto hist = provider.create_histogram("stress.hist", "ms", "", {1, 10, 100});
  auto bound = counter.bind({{"kind", "bound"}});
  auto bound_hist = hist.bind({{"kind", "bound"}});

  std::atomic<bool> done{false};
  std::atomic<int> collections{0};
  std::atomic<bool> decreased{false};
  std::thread collector([&] {
    std::int64_t last = 0;
    while (!done.load()) {
      auto s = provider.collect();
      if (const MetricData* m = find_metric(s, "stress.counter")) {
        if (const NumberPoint* p = find_point(*m, {{"kind", "bound"}})) {
          std::int64_t v = std::get<std::int64_t>(p->value);
          if (v < last) decreased = true;
          last = v;
        }
      }
      if (const MetricData* m = find_metric(s, "stress.hist")) {
        for (const auto& p : m->histogram_points()) {
          std::uint64_t sum = 0;
          for (auto b : p.bucket_counts) sum += b;
          if (sum != p.count) decreased = true;
        }
      }
      collections.fetch_add(1);
    }
  });

  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < kIterations; ++i) {
        bound.add(1);
        counter.add(2, {{"kind", "unbound"}, {"thread", t % 2}});
        dcounter.add(0.5);
        updown.add(i % 2 == 0 ? 3 : -1);
        bound_hist.record(static_cast<double>(i % 200));
        hist.record(5, {{"kind", "unbound"}});
        if (i % (kIterations / kSets) == 0) counter.add(1, {{"set", i / (kIterations / kSets)}});
      }
    });
  }
  for (auto& w : workers) w.join();
  done = true;
  collector.join();

  EXPECT_FALSE(decreased.load());
  EXPECT_GT(collections.load(), 0);
  auto s = provider.collect();
  const std::int64_t n = static_cast<std::int64_t>(kThreads) * kIterations;
  EXPECT_EQ(int_value(s, "stress.counter", {{"kind", "bound"}}), n);
  EXPECT_EQ(int_value(s, "stress.counter", {{"kind", "unbound"}, {"thread", 0}}), n);
  EXPECT_EQ(int_value(s, "stress.counter", {{"kind", "unbound"}, {"thread", 1}}), n);
  for (int set = 0; set < kSets; ++set) {
    EXPECT_EQ(int_value(s, "stress.counter", {{"set", set}}), kThreads) << set;
  }
  EXPECT_EQ(testing::double_value(s, "stress.double"), 0.5 * static_cast<double>(n));
  EXPECT_EQ(int_value(s, "stress.updown"), n);  // (3 - 1) per two iterations

  const MetricData* h = find_metric(s, "stress.hist");
  ASSERT_NE(h, nullptr);
  const HistogramPoint* b = find_histogram_point(*h, {{"kind", "bound"}});
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->count, static_cast<std::uint64_t>(n));
  // i % 200 over 0..199: bucket (-inf,1] has 0 and 1; (1,10] has 2..10; (10,100] 11..100; rest.
  const std::uint64_t rounds = static_cast<std::uint64_t>(n) / 200;
  EXPECT_EQ(b->bucket_counts,
            (std::vector<std::uint64_t>{2 * rounds, 9 * rounds, 90 * rounds, 99 * rounds}));
  EXPECT_EQ(b->sum, static_cast<double>(rounds) * (199.0 * 200.0 / 2.0));
  EXPECT_EQ(b->min, 0.0);
  EXPECT_EQ(b->max, 199.0);
  const HistogramPoint* u = find_histogram_point(*h, {{"kind", "unbound"}});
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->count, static_cast<std::uint64_t>(n));
  EXPECT_EQ(u->sum, 5.0 * static_cast<double>(n));
}

}  // namespace
}  // namespace gym::telemetry
