// The OTLP encodings decoded by protobuf's own parsers: the binary parser for http/protobuf,
// and protobuf's JSON parser (the proto3 JSON mapping) for http/json.
#include "exporters/otlp/otlp_encoding.h"

#include <gtest/gtest.h>

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>

#include "telemetry/metrics/meter_provider.h"

namespace gym::exporters {
namespace {

namespace common = opentelemetry::proto::common::v1;
namespace metrics = opentelemetry::proto::metrics::v1;
using telemetry::MeterProvider;
using telemetry::MeterProviderOptions;
using telemetry::ObservableResult;

telemetry::MetricsSnapshot known_snapshot() {
  MeterProviderOptions o;
  o.resource.attributes = telemetry::AttributeSet{
      {"service.name", "nemo-gym/mcqa"}, {"process.pid", 41237}, {"nv.dl.world_size", 1}};
  static MeterProvider* p = [&] {
    auto* provider = new MeterProvider(o);  // lives for the test binary (callbacks below)
    provider->create_counter<std::int64_t>("t.counter", "{request}", "requests")
        .add(5, {{"route", "/run"}, {"ok", true}, {"ratio", 0.25}});
    provider->create_counter<double>("t.dcounter", "s").add(1.5);
    provider->create_up_down_counter<std::int64_t>("t.updown", "{request}").add(-2);
    provider->create_gauge<double>("gym.verify.success_rate", "").record(0.75);
    provider->create_gauge<std::int64_t>("gym.servers.active", "").record(3);
    auto h = provider->create_histogram("t.hist", "ms", "durations", {0.5, 1, 2.5});
    for (double v : {0.25, 0.5, 0.75, 2.5, 3.0, 1e6}) h.record(v);
    h.record(1.0, {{"nemo.gym.http.destination.server.name", "policy_model"}});
    provider->create_observable_counter<std::int64_t>(
        "gym.http.connection_pool.connect_total", "{connection}", "",
        [](ObservableResult<std::int64_t>& r) {
          r.observe(42, {{"nemo.gym.http.destination.server.name", "external"}});
        });
    provider->create_observable_gauge<std::int64_t>(
        "gym.host.memory.total", "By", "",
        [](ObservableResult<std::int64_t>& r) { r.observe(std::int64_t{1} << 40); });
    return provider;
  }();
  return p->collect();
}

const metrics::Metric& find(const ExportMetricsServiceRequest& r, std::string_view name) {
  for (const auto& m : r.resource_metrics(0).scope_metrics(0).metrics()) {
    if (m.name() == name) return m;
  }
  throw std::runtime_error("no metric " + std::string(name));
}

std::string attr_string(const google::protobuf::RepeatedPtrField<common::KeyValue>& kvs,
                        std::string_view key) {
  for (const auto& kv : kvs) {
    if (kv.key() == key) return kv.value().string_value();
  }
  return "<absent>";
}

TEST(OtlpProtobuf, DecodesWithProtobufsParserToEveryField) {
  auto snapshot = known_snapshot();
  std::string bytes = encode_request(snapshot, OtlpProtocol::http_protobuf);
  ExportMetricsServiceRequest r;
  ASSERT_TRUE(r.ParseFromString(bytes));
  ASSERT_EQ(r.resource_metrics_size(), 1);
  const auto& rm = r.resource_metrics(0);
  ASSERT_EQ(rm.resource().attributes_size(), 3);
  EXPECT_EQ(rm.resource().attributes(0).key(), "nv.dl.world_size");
  EXPECT_EQ(rm.resource().attributes(0).value().int_value(), 1);
  EXPECT_EQ(rm.resource().attributes(1).value().int_value(), 41237);
  EXPECT_EQ(attr_string(rm.resource().attributes(), "service.name"), "nemo-gym/mcqa");
  ASSERT_EQ(rm.scope_metrics_size(), 1);
  EXPECT_EQ(rm.scope_metrics(0).scope().name(), "gym-cpp");
  EXPECT_EQ(rm.scope_metrics(0).scope().version(), GYM_VERSION);
  EXPECT_EQ(rm.scope_metrics(0).metrics_size(), 8);

  const auto& counter = find(r, "t.counter");
  EXPECT_EQ(counter.unit(), "{request}");
  EXPECT_EQ(counter.description(), "requests");
  ASSERT_TRUE(counter.has_sum());
  EXPECT_EQ(counter.sum().aggregation_temporality(), metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
  EXPECT_TRUE(counter.sum().is_monotonic());
  ASSERT_EQ(counter.sum().data_points_size(), 1);
  const auto& cp = counter.sum().data_points(0);
  EXPECT_EQ(cp.value_case(), metrics::NumberDataPoint::kAsInt);
  EXPECT_EQ(cp.as_int(), 5);
  EXPECT_EQ(cp.start_time_unix_nano(), snapshot.metrics[0].start_time_unix_nano);
  EXPECT_EQ(cp.time_unix_nano(), snapshot.metrics[0].time_unix_nano);
  EXPECT_GT(cp.time_unix_nano(), cp.start_time_unix_nano());
  ASSERT_EQ(cp.attributes_size(), 3);
  EXPECT_EQ(cp.attributes(0).key(), "ok");
  EXPECT_TRUE(cp.attributes(0).value().bool_value());
  EXPECT_EQ(cp.attributes(1).key(), "ratio");
  EXPECT_EQ(cp.attributes(1).value().double_value(), 0.25);
  EXPECT_EQ(cp.attributes(2).value().string_value(), "/run");

  const auto& dcounter = find(r, "t.dcounter").sum().data_points(0);
  EXPECT_EQ(dcounter.value_case(), metrics::NumberDataPoint::kAsDouble);
  EXPECT_EQ(dcounter.as_double(), 1.5);

  const auto& updown = find(r, "t.updown").sum();
  EXPECT_FALSE(updown.is_monotonic());
  EXPECT_EQ(updown.aggregation_temporality(), metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
  EXPECT_EQ(updown.data_points(0).as_int(), -2);

  const auto& rate = find(r, "gym.verify.success_rate");
  ASSERT_TRUE(rate.has_gauge());
  EXPECT_EQ(rate.unit(), "");
  EXPECT_EQ(rate.gauge().data_points(0).as_double(), 0.75);
  EXPECT_EQ(rate.gauge().data_points(0).start_time_unix_nano(), 0u);
  EXPECT_EQ(find(r, "gym.servers.active").gauge().data_points(0).as_int(), 3);

  const auto& hist = find(r, "t.hist");
  ASSERT_TRUE(hist.has_histogram());
  EXPECT_EQ(hist.histogram().aggregation_temporality(),
            metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
  ASSERT_EQ(hist.histogram().data_points_size(), 2);
  const auto& hp = hist.histogram().data_points(0);
  EXPECT_EQ(hp.attributes_size(), 0);
  EXPECT_EQ(hp.count(), 6u);
  ASSERT_TRUE(hp.has_sum());
  EXPECT_EQ(hp.sum(), 0.25 + 0.5 + 0.75 + 2.5 + 3.0 + 1e6);
  ASSERT_TRUE(hp.has_min());
  EXPECT_EQ(hp.min(), 0.25);
  ASSERT_TRUE(hp.has_max());
  EXPECT_EQ(hp.max(), 1e6);
  EXPECT_EQ(std::vector<double>(hp.explicit_bounds().begin(), hp.explicit_bounds().end()),
            (std::vector<double>{0.5, 1, 2.5}));
  EXPECT_EQ(std::vector<std::uint64_t>(hp.bucket_counts().begin(), hp.bucket_counts().end()),
            (std::vector<std::uint64_t>{2, 1, 1, 2}));
  const auto& hp2 = hist.histogram().data_points(1);
  EXPECT_EQ(attr_string(hp2.attributes(), "nemo.gym.http.destination.server.name"), "policy_model");
  EXPECT_EQ(std::vector<std::uint64_t>(hp2.bucket_counts().begin(), hp2.bucket_counts().end()),
            (std::vector<std::uint64_t>{0, 1, 0, 0}));

  const auto& connects = find(r, "gym.http.connection_pool.connect_total");
  EXPECT_EQ(connects.unit(), "{connection}");
  EXPECT_TRUE(connects.sum().is_monotonic());
  EXPECT_EQ(connects.sum().data_points(0).as_int(), 42);
  EXPECT_EQ(find(r, "gym.host.memory.total").gauge().data_points(0).as_int(),
            std::int64_t{1} << 40);
}

TEST(OtlpJson, ProtobufsJsonParserReadsTheSameRequest) {
  auto snapshot = known_snapshot();
  std::string text = encode_request(snapshot, OtlpProtocol::http_json);
  ExportMetricsServiceRequest from_json;
  google::protobuf::util::JsonParseOptions strict;
  strict.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(text, &from_json, strict);
  ASSERT_TRUE(status.ok()) << status.ToString();
  ExportMetricsServiceRequest from_proto = to_otlp_proto(snapshot);
  std::string diff;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differencer.Compare(from_proto, from_json)) << diff;
  // 64-bit integers are strings and the temporality is a number in the JSON mapping.
  EXPECT_NE(text.find("\"asInt\":\"5\""), std::string::npos);
  EXPECT_NE(text.find("\"aggregationTemporality\":2"), std::string::npos);
  EXPECT_NE(text.find("\"bucketCounts\":[\"2\",\"1\",\"1\",\"2\"]"), std::string::npos);
}

TEST(OtlpEncoding, ContentTypes) {
  EXPECT_STREQ(content_type(OtlpProtocol::http_protobuf), "application/x-protobuf");
  EXPECT_STREQ(content_type(OtlpProtocol::http_json), "application/json");
}

TEST(OtlpEncoding, EmptySnapshotStillHasResourceAndScope) {
  telemetry::MetricsSnapshot empty{{}, telemetry::gym_scope(), {}};
  ExportMetricsServiceRequest r;
  ASSERT_TRUE(r.ParseFromString(encode_request(empty, OtlpProtocol::http_protobuf)));
  ASSERT_EQ(r.resource_metrics_size(), 1);
  EXPECT_EQ(r.resource_metrics(0).scope_metrics(0).scope().name(), "gym-cpp");
}

}  // namespace
}  // namespace gym::exporters
