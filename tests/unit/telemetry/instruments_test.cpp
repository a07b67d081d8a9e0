#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "telemetry/metrics/meter_provider.h"
#include "telemetry_test_support.h"

namespace gym::telemetry {
namespace {

using testing::double_value;
using testing::find_histogram_point;
using testing::find_metric;
using testing::find_point;
using testing::int_value;

MeterProviderOptions with_resource() {
  MeterProviderOptions o;
  o.resource.attributes = AttributeSet{{"service.name", "test"}};
  return o;
}

TEST(Counter, ExactValuesPerAttributeSet) {
  MeterProvider provider(with_resource());
  auto c = provider.create_counter<std::int64_t>("test.requests", "{request}", "Requests");
  c.add(1);
  c.add(2);
  c.add(5, {{"route", "/run"}, {"status", 200}});
  c.add(7, {{"status", 200}, {"route", "/run"}});  // same set, other order
  auto bound = c.bind({{"route", "/run"}, {"status", 200}});
  bound.add(10);
  c.add(3, {{"route", "/verify"}, {"status", 500}});

  auto s = provider.collect();
  EXPECT_EQ(int_value(s, "test.requests"), 3);
  EXPECT_EQ(int_value(s, "test.requests", {{"route", "/run"}, {"status", 200}}), 22);
  EXPECT_EQ(int_value(s, "test.requests", {{"route", "/verify"}, {"status", 500}}), 3);
  const MetricData* m = find_metric(s, "test.requests");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->number_points().size(), 3u);
  EXPECT_EQ(m->type(), MetricType::sum);
  EXPECT_TRUE(m->monotonic());
  EXPECT_EQ(m->descriptor.unit, "{request}");
  EXPECT_EQ(m->descriptor.description, "Requests");
  EXPECT_EQ(m->descriptor.value_type, ValueType::int64);
  EXPECT_GT(m->start_time_unix_nano, 0u);
  EXPECT_LE(m->start_time_unix_nano, m->time_unix_nano);
  EXPECT_EQ(s.resource.attributes, (AttributeSet{{"service.name", "test"}}));
  EXPECT_EQ(s.scope.name, "gym-cpp");
  EXPECT_EQ(s.scope.version, GYM_VERSION);
}

TEST(Counter, ValuesAreCumulativeAcrossCollections) {
  MeterProvider provider;
  auto c = provider.create_counter<double>("test.seconds", "s");
  c.add(0.5);
  auto first = provider.collect();
  c.add(0.25);
  auto second = provider.collect();
  EXPECT_EQ(double_value(first, "test.seconds"), 0.5);
  EXPECT_EQ(double_value(second, "test.seconds"), 0.75);
  EXPECT_EQ(find_metric(first, "test.seconds")->start_time_unix_nano,
            find_metric(second, "test.seconds")->start_time_unix_nano);
  EXPECT_LE(find_metric(first, "test.seconds")->time_unix_nano,
            find_metric(second, "test.seconds")->time_unix_nano);
}

TEST(Counter, InvalidValuesAreDropped) {
  MeterProvider provider;
  auto ints = provider.create_counter<std::int64_t>("test.ints");
  auto doubles = provider.create_counter<double>("test.doubles");
  ints.add(4);
  ints.add(-1);
  ints.bind().add(-5);
  doubles.add(1.5);
  doubles.add(-0.5);
  doubles.add(std::numeric_limits<double>::quiet_NaN());
  doubles.add(std::numeric_limits<double>::infinity());
  auto s = provider.collect();
  EXPECT_EQ(int_value(s, "test.ints"), 4);
  EXPECT_EQ(double_value(s, "test.doubles"), 1.5);
}

TEST(Counter, ZeroIsARecordedValue) {
  MeterProvider provider;
  auto c = provider.create_counter<std::int64_t>("test.zero");
  c.add(0, {{"k", "v"}});
  auto s = provider.collect();
  EXPECT_EQ(int_value(s, "test.zero", {{"k", "v"}}), 0);
}

TEST(Counter, SeriesWithoutMeasurementsAreNotExported) {
  MeterProvider provider;
  auto c = provider.create_counter<std::int64_t>("test.bound_only");
  auto h = provider.create_histogram("test.hist_bound_only", "ms", "", {1, 2});
  auto g = provider.create_gauge<double>("test.gauge_bound_only");
  auto bc = c.bind({{"k", "v"}});
  auto bh = h.bind({{"k", "v"}});
  auto bg = g.bind();
  EXPECT_TRUE(bh && bg);
  EXPECT_TRUE(provider.collect().metrics.empty());
  bc.add(1);
  auto s = provider.collect();
  ASSERT_EQ(s.metrics.size(), 1u);
  EXPECT_EQ(s.metrics[0].descriptor.name, "test.bound_only");
}

TEST(UpDownCounter, AcceptsNegativeValues) {
  MeterProvider provider;
  auto active = provider.create_up_down_counter<std::int64_t>("test.active", "{request}");
  auto bound = active.bind({{"http.method", "GET"}});
  bound.add(1);
  bound.add(1);
  bound.add(-1);
  active.add(-3, {{"http.method", "POST"}});
  auto s = provider.collect();
  EXPECT_EQ(int_value(s, "test.active", {{"http.method", "GET"}}), 1);
  EXPECT_EQ(int_value(s, "test.active", {{"http.method", "POST"}}), -3);
  const MetricData* m = find_metric(s, "test.active");
  EXPECT_EQ(m->type(), MetricType::sum);
  EXPECT_FALSE(m->monotonic());

  auto d = provider.create_up_down_counter<double>("test.level");
  d.add(0.5);
  d.add(-2.0);
  EXPECT_EQ(double_value(provider.collect(), "test.level"), -1.5);
}

TEST(Gauge, KeepsTheLastValue) {
  MeterProvider provider;
  auto rate = provider.create_gauge<double>("test.rate");
  auto servers = provider.create_gauge<std::int64_t>("test.servers");
  rate.record(0.5);
  rate.record(0.25);
  servers.record(3);
  servers.bind().record(0);
  rate.record(std::numeric_limits<double>::quiet_NaN());  // dropped
  auto s = provider.collect();
  EXPECT_EQ(double_value(s, "test.rate"), 0.25);
  EXPECT_EQ(int_value(s, "test.servers"), 0);
  const MetricData* m = find_metric(s, "test.rate");
  EXPECT_EQ(m->type(), MetricType::gauge);
  EXPECT_EQ(m->start_time_unix_nano, 0u);
  EXPECT_GT(m->time_unix_nano, 0u);
}

TEST(Histogram, BucketEdgesAreInclusiveUpperBounds) {
  MeterProvider provider;
  auto h = provider.create_histogram("test.duration", "ms", "", {1, 2, 5});
  for (double v : {0.0, 1.0, 1.0000001, 2.0, 4.999, 5.0, 5.0000001, 1000.0}) h.record(v);
  auto s = provider.collect();
  const MetricData* m = find_metric(s, "test.duration");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->type(), MetricType::histogram);
  EXPECT_EQ(m->descriptor.bounds, (std::vector<double>{1, 2, 5}));
  const HistogramPoint* p = find_histogram_point(*m, {});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->bucket_counts, (std::vector<std::uint64_t>{2, 2, 2, 2}));
  EXPECT_EQ(p->count, 8u);
  EXPECT_DOUBLE_EQ(p->sum, 0.0 + 1.0 + 1.0000001 + 2.0 + 4.999 + 5.0 + 5.0000001 + 1000.0);
  EXPECT_EQ(p->min, 0.0);
  EXPECT_EQ(p->max, 1000.0);
}

TEST(Histogram, MinMaxAndSumPerSeries) {
  MeterProvider provider;
  auto h = provider.create_histogram("test.queue", "ms", "", {0.5, 1, 10});
  auto ok = h.bind({{"outcome", "ok"}});
  ok.record(3);
  ok.record(0.75);
  ok.record(12);
  h.record(0.25, {{"outcome", "abandoned"}});
  h.record(-1, {{"outcome", "abandoned"}});                                       // dropped
  h.record(std::numeric_limits<double>::infinity(), {{"outcome", "abandoned"}});  // dropped
  auto s = provider.collect();
  const MetricData* m = find_metric(s, "test.queue");
  const HistogramPoint* a = find_histogram_point(*m, {{"outcome", "ok"}});
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->count, 3u);
  EXPECT_EQ(a->sum, 15.75);
  EXPECT_EQ(a->min, 0.75);
  EXPECT_EQ(a->max, 12.0);
  EXPECT_EQ(a->bucket_counts, (std::vector<std::uint64_t>{0, 1, 1, 1}));
  const HistogramPoint* b = find_histogram_point(*m, {{"outcome", "abandoned"}});
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->count, 1u);
  EXPECT_EQ(b->min, 0.25);
  EXPECT_EQ(b->max, 0.25);
  EXPECT_EQ(b->bucket_counts, (std::vector<std::uint64_t>{1, 0, 0, 0}));
}

TEST(Histogram, NoBoundsMeansOneBucket) {
  MeterProvider provider;
  auto h = provider.create_histogram("test.single", "", "", {});
  h.record(1);
  h.record(100);
  auto s = provider.collect();
  const HistogramPoint* p = find_histogram_point(*find_metric(s, "test.single"), {});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->bucket_counts, (std::vector<std::uint64_t>{2}));
  EXPECT_EQ(p->sum, 101);
}

TEST(Observable, CallbacksRunAtEachCollection) {
  MeterProvider provider;
  std::int64_t connects = 0;
  int calls = 0;
  provider.create_observable_counter<std::int64_t>(
      "test.connects", "{connection}", "", [&](ObservableResult<std::int64_t>& r) {
        ++calls;
        r.observe(connects, {{"dest", "model"}});
        r.observe(1, {{"dest", "external"}});
        r.observe(2, {{"dest", "external"}});  // last value per set wins
      });
  provider.create_observable_gauge<double>("test.memory", "By", "",
                                           [&](ObservableResult<double>& r) {
                                             r.observe(1.5);
                                             r.observe(-2.5, {{"kind", "delta"}});
                                           });
  connects = 5;
  auto first = provider.collect();
  connects = 9;
  auto second = provider.collect();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(int_value(first, "test.connects", {{"dest", "model"}}), 5);
  EXPECT_EQ(int_value(second, "test.connects", {{"dest", "model"}}), 9);
  EXPECT_EQ(int_value(second, "test.connects", {{"dest", "external"}}), 2);
  EXPECT_EQ(find_metric(second, "test.connects")->type(), MetricType::sum);
  EXPECT_TRUE(find_metric(second, "test.connects")->monotonic());
  EXPECT_GT(find_metric(second, "test.connects")->start_time_unix_nano, 0u);
  EXPECT_EQ(double_value(second, "test.memory"), 1.5);
  EXPECT_EQ(double_value(second, "test.memory", {{"kind", "delta"}}), -2.5);
  EXPECT_EQ(find_metric(second, "test.memory")->type(), MetricType::gauge);
}

TEST(Observable, NegativeCounterValuesAndThrowingCallbacksAreSkipped) {
  MeterProvider provider;
  provider.create_observable_counter<std::int64_t>(
      "test.bad", "", "", [](ObservableResult<std::int64_t>& r) { r.observe(-1); });
  provider.create_observable_gauge<std::int64_t>("test.throws", "", "",
                                                 [](ObservableResult<std::int64_t>& r) {
                                                   r.observe(1);
                                                   throw std::runtime_error("boom");
                                                 });
  provider.create_observable_gauge<std::int64_t>(
      "test.fine", "", "", [](ObservableResult<std::int64_t>& r) { r.observe(4); });
  auto s = provider.collect();
  EXPECT_EQ(find_metric(s, "test.bad"), nullptr);
  EXPECT_EQ(find_metric(s, "test.throws"), nullptr);
  EXPECT_EQ(int_value(s, "test.fine"), 4);
}

TEST(Cardinality, SetsBeyondTheLimitGoToTheOverflowSeries) {
  MeterProvider provider;
  auto c = provider.create_counter<std::int64_t>("test.cardinality");
  for (int i = 0; i < 2005; ++i) c.add(1, {{"i", i}});
  c.add(10, {{"i", 0}});      // a set within the limit keeps its own series
  c.add(100, {{"i", 5000}});  // a new set past the limit
  auto past = c.bind({{"i", 6000}});
  past.add(1000);
  auto s = provider.collect();
  const MetricData* m = find_metric(s, "test.cardinality");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->number_points().size(), 2001u);
  EXPECT_EQ(int_value(s, "test.cardinality", {{"i", 0}}), 11);
  EXPECT_EQ(int_value(s, "test.cardinality", {{"i", 1999}}), 1);
  EXPECT_EQ(find_point(*m, {{"i", 2000}}), nullptr);
  EXPECT_EQ(int_value(s, "test.cardinality", {{"otel.metric.overflow", true}}), 5 + 100 + 1000);
}

TEST(Cardinality, LimitIsConfigurableAndAppliesToHistogramsAndObservables) {
  MeterProviderOptions options;
  options.cardinality_limit = 2;
  MeterProvider provider(options);
  auto h = provider.create_histogram("test.h", "", "", {10});
  for (int i = 0; i < 4; ++i) h.record(i, {{"i", i}});
  provider.create_observable_counter<std::int64_t>("test.o", "", "",
                                                   [](ObservableResult<std::int64_t>& r) {
                                                     for (int i = 0; i < 5; ++i)
                                                       r.observe(10, {{"i", i}});
                                                   });
  auto s = provider.collect();
  const HistogramPoint* over =
      find_histogram_point(*find_metric(s, "test.h"), {{"otel.metric.overflow", true}});
  ASSERT_NE(over, nullptr);
  EXPECT_EQ(over->count, 2u);
  EXPECT_EQ(over->sum, 5.0);
  EXPECT_EQ(find_metric(s, "test.h")->histogram_points().size(), 3u);
  EXPECT_EQ(int_value(s, "test.o", {{"otel.metric.overflow", true}}), 30);
  EXPECT_EQ(find_metric(s, "test.o")->number_points().size(), 3u);
}

TEST(Disabled, HandlesAreEmptyAndNothingIsCollected) {
  MeterProviderOptions options;
  options.enabled = false;
  MeterProvider provider(options);
  EXPECT_FALSE(provider.enabled());
  auto c = provider.create_counter<std::int64_t>("test.c");
  auto h = provider.create_histogram("test.h", "ms", "", {1});
  auto g = provider.create_gauge<double>("test.g");
  auto u = provider.create_up_down_counter<std::int64_t>("test.u");
  bool called = false;
  provider.create_observable_gauge<std::int64_t>(
      "test.o", "", "", [&](ObservableResult<std::int64_t>&) { called = true; });
  EXPECT_FALSE(c);
  EXPECT_FALSE(h);
  EXPECT_EQ(c.descriptor(), nullptr);
  auto bc = c.bind({{"k", "v"}});
  auto bh = h.bind();
  EXPECT_FALSE(bc);
  EXPECT_FALSE(bh);
  c.add(1, {{"k", "v"}});
  bc.add(1);
  h.record(1);
  bh.record(1);
  g.record(1);
  u.add(-1);
  auto s = provider.collect();
  EXPECT_TRUE(s.metrics.empty());
  EXPECT_FALSE(called);
  // Definitions are checked even when disabled.
  EXPECT_THROW(provider.create_counter<std::int64_t>("9bad"), std::invalid_argument);
  EXPECT_THROW(provider.create_gauge<double>("test.c"), std::invalid_argument);
}

TEST(Disabled, DefaultConstructedHandlesAreEmpty) {
  Counter<std::int64_t> c;
  BoundCounter<std::int64_t> bc;
  Histogram h;
  BoundHistogram bh;
  Gauge<double> g;
  UpDownCounter<std::int64_t> u;
  c.add(1);
  bc.add(1);
  h.record(1.0, {{"k", "v"}});
  bh.record(1.0);
  g.record(2.0);
  u.add(-1);
  EXPECT_FALSE(c);
  EXPECT_FALSE(c.bind());
}

TEST(Registry, ValidatesNamesUnitsAndBounds) {
  MeterProvider provider;
  EXPECT_NO_THROW(provider.create_counter<std::int64_t>("gym.http.connection_pool.connect_total"));
  EXPECT_NO_THROW(provider.create_counter<std::int64_t>("a_b-c/d.E9"));
  EXPECT_THROW(provider.create_counter<std::int64_t>(""), std::invalid_argument);
  EXPECT_THROW(provider.create_counter<std::int64_t>("1abc"), std::invalid_argument);
  EXPECT_THROW(provider.create_counter<std::int64_t>("_abc"), std::invalid_argument);
  EXPECT_THROW(provider.create_counter<std::int64_t>("has space"), std::invalid_argument);
  EXPECT_THROW(provider.create_counter<std::int64_t>("a" + std::string(255, 'b')),
               std::invalid_argument);
  EXPECT_NO_THROW(provider.create_counter<std::int64_t>("x" + std::string(254, 'b')));
  EXPECT_THROW(provider.create_counter<std::int64_t>("test.unit", std::string(64, 'u')),
               std::invalid_argument);
  EXPECT_THROW(provider.create_counter<std::int64_t>("test.unit2", "\xc2\xb5s"),
               std::invalid_argument);
  EXPECT_THROW(provider.create_histogram("test.h1", "", "", {1, 1}), std::invalid_argument);
  EXPECT_THROW(provider.create_histogram("test.h2", "", "", {2, 1}), std::invalid_argument);
  EXPECT_THROW(
      provider.create_histogram("test.h3", "", "", {1, std::numeric_limits<double>::infinity()}),
      std::invalid_argument);
  try {
    provider.create_histogram("test.h4", "", "", {5, 3});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("test.h4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("strictly increasing"), std::string::npos) << e.what();
  }
}

TEST(Registry, IdenticalDuplicatesShareStorageAndConflictsThrow) {
  MeterProvider provider;
  auto a = provider.create_counter<std::int64_t>("test.dup", "ms", "d");
  auto b = provider.create_counter<std::int64_t>("test.dup", "ms", "d");
  a.add(1);
  b.add(2);
  EXPECT_EQ(int_value(provider.collect(), "test.dup"), 3);
  EXPECT_THROW(provider.create_counter<double>("test.dup", "ms", "d"), std::invalid_argument);
  EXPECT_THROW(provider.create_counter<std::int64_t>("test.dup", "s", "d"), std::invalid_argument);
  EXPECT_THROW(provider.create_counter<std::int64_t>("TEST.DUP", "ms", "d"), std::invalid_argument);
  EXPECT_THROW(provider.create_up_down_counter<std::int64_t>("test.dup", "ms", "d"),
               std::invalid_argument);
  provider.create_histogram("test.hdup", "ms", "", {1, 2});
  EXPECT_NO_THROW(provider.create_histogram("test.hdup", "ms", "", {1, 2}));
  EXPECT_THROW(provider.create_histogram("test.hdup", "ms", "", {1, 3}), std::invalid_argument);
  provider.create_observable_gauge<std::int64_t>("test.odup", "", "",
                                                 [](ObservableResult<std::int64_t>&) {});
  EXPECT_THROW(provider.create_observable_gauge<std::int64_t>(
                   "test.odup", "", "", [](ObservableResult<std::int64_t>&) {}),
               std::invalid_argument);
  try {
    provider.create_gauge<double>("test.dup");
    FAIL();
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("already registered as counter"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace gym::telemetry
