// The OTLP/JSON decoder: what the encoder writes comes back, other producers' spellings are read,
// and a request of the wrong shape is an error that says which part.
#include "exporters/otlp/otlp_json_decode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <boost/json.hpp>

#include "exporters/otlp/otlp_json.h"
#include "telemetry/metrics/meter_provider.h"

namespace gym::exporters {
namespace {

namespace json = boost::json;
using telemetry::AttributeSet;
using telemetry::MeterProvider;
using telemetry::MeterProviderOptions;
using telemetry::MetricType;

const DecodedMetric& metric_named(const DecodedResourceMetrics& r, std::string_view name) {
  for (const auto& m : r.metrics) {
    if (m.name == name) return m;
  }
  throw std::runtime_error("no metric " + std::string(name));
}

std::string error_of(std::string_view request) {
  try {
    decode_otlp_json(json::parse(request).as_object());
  } catch (const OtlpJsonError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no OtlpJsonError for " << request;
  return {};
}

TEST(OtlpJsonDecode, ReadsBackWhatTheEncoderWrote) {
  MeterProviderOptions o;
  o.resource.attributes = AttributeSet{{"service.name", "svc"}, {"process.pid", 7}};
  MeterProvider p(o);
  p.create_counter<std::int64_t>("t.counter").add(5, {{"route", "/run"}, {"ok", true}});
  p.create_gauge<double>("t.gauge").record(0.75, {{"ratio", 0.5}});
  auto h = p.create_histogram("t.hist", "ms", "", {1, 10});
  for (double v : {0.5, 10.0, 11.0}) h.record(v);

  const auto decoded = decode_otlp_json(otlp_json(p.collect()).as_object());
  ASSERT_EQ(decoded.size(), 1u);
  const DecodedResourceMetrics& r = decoded[0];
  EXPECT_EQ(r.resource, (AttributeSet{{"service.name", "svc"}, {"process.pid", 7}}));

  const DecodedMetric& counter = metric_named(r, "t.counter");
  EXPECT_EQ(counter.type, MetricType::sum);
  ASSERT_EQ(counter.numbers.size(), 1u);
  EXPECT_EQ(counter.numbers[0].attributes, (AttributeSet{{"route", "/run"}, {"ok", true}}));
  EXPECT_EQ(std::get<std::int64_t>(counter.numbers[0].value), 5);

  const DecodedMetric& gauge = metric_named(r, "t.gauge");
  EXPECT_EQ(gauge.type, MetricType::gauge);
  ASSERT_EQ(gauge.numbers.size(), 1u);
  EXPECT_EQ(std::get<double>(gauge.numbers[0].value), 0.75);

  const DecodedMetric& hist = metric_named(r, "t.hist");
  EXPECT_EQ(hist.type, MetricType::histogram);
  ASSERT_EQ(hist.histograms.size(), 1u);
  const BucketHistogram& b = hist.histograms[0].histogram;
  EXPECT_EQ(b.bounds, (std::vector<double>{1, 10}));
  EXPECT_EQ(b.bucket_counts, (std::vector<std::uint64_t>{1, 1, 1}));
  EXPECT_EQ(b.count, 3u);
  EXPECT_EQ(b.sum, 21.5);
  EXPECT_EQ(b.min, 0.5);
  EXPECT_EQ(b.max, 11.0);
}

TEST(OtlpJsonDecode, ReadsOtherProducersSpellings) {
  const auto decoded = decode_otlp_json(json::parse(R"({"resourceMetrics": [
    {"scopeMetrics": [{"metrics": [
      {"name": "plain", "sum": {"dataPoints": [{"asInt": 3}]}},
      {"name": "nan", "gauge": {"dataPoints": [{"asDouble": "NaN"}]}},
      {"name": "no.buckets", "histogram": {"dataPoints": [{"count": "2", "sum": 4}]}},
      {"name": "skipped", "exponentialHistogram": {"dataPoints": []}}]}]},
    {"resource": {"attributes": [{"key": "k", "value": {"arrayValue": {}}}]}}]})")
                                            .as_object());
  ASSERT_EQ(decoded.size(), 2u);
  ASSERT_EQ(decoded[0].metrics.size(), 3u);  // the exponential histogram is left out
  EXPECT_EQ(std::get<std::int64_t>(metric_named(decoded[0], "plain").numbers[0].value), 3);
  EXPECT_TRUE(std::isnan(std::get<double>(metric_named(decoded[0], "nan").numbers[0].value)));
  const BucketHistogram& h = metric_named(decoded[0], "no.buckets").histograms[0].histogram;
  EXPECT_EQ(h.count, 2u);
  EXPECT_TRUE(h.bucket_counts.empty());
  EXPECT_FALSE(h.min.has_value());
  EXPECT_EQ(decoded[1].resource.size(), 0u);  // an array value is left out
  EXPECT_TRUE(decode_otlp_json(json::object{}).empty());
}

TEST(OtlpJsonDecode, WrongShapesSayWhichPart) {
  EXPECT_EQ(error_of(R"({"resourceMetrics": {}})"),
            "resourceMetrics of the request is not an array");
  EXPECT_EQ(error_of(R"({"resourceMetrics": [{"scopeMetrics": [{"metrics": [{"sum": {}}]}]}]})"),
            "a metric has no name");
  EXPECT_EQ(error_of(R"({"resourceMetrics": [{"scopeMetrics": [{"metrics": [
              {"name": "h", "histogram": {"dataPoints": [
                {"bucketCounts": ["1", "2", "3"], "explicitBounds": [1]}]}}]}]}]})"),
            "a histogram point has 3 bucket counts for 1 bounds");
  EXPECT_EQ(error_of(R"({"resourceMetrics": [{"scopeMetrics": [{"metrics": [
              {"name": "c", "sum": {"dataPoints": [{"asInt": "1.5"}]}}]}]}]})"),
            "asInt is not a 64-bit integer");
}

}  // namespace
}  // namespace gym::exporters
