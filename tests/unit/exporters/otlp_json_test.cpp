// The OTLP/JSON encoding of a snapshot (the protobuf JSON mapping of OTLP), checked field by field.
#include "exporters/otlp/otlp_json.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include <boost/json.hpp>

#include "telemetry/metrics/meter_provider.h"

namespace gym::exporters {
namespace {

namespace json = boost::json;
using telemetry::MeterProvider;
using telemetry::MeterProviderOptions;
using telemetry::ObservableResult;

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
  o.resource.attributes = telemetry::AttributeSet{{"service.name", "svc"}, {"process.pid", 7}};
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

}  // namespace
}  // namespace gym::exporters
