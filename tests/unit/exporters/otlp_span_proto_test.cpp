// encode_spans_protobuf writes the OTLP bytes by hand; libprotobuf is the judge. The same batch
// built as generated messages (ExportTraceServiceRequest) and serialised by libprotobuf must give
// exactly our bytes, and libprotobuf must parse our bytes back into that message, for spans of
// every shape: roots and children, tracestate, every attribute type (negative and large integers,
// empty strings, non-ASCII text), events with and without attributes, each status, unsampled.
#include "exporters/otlp/otlp_span_proto.h"

#include <gtest/gtest.h>

#include <google/protobuf/util/message_differencer.h>

#include <random>

#include "exporters/otlp/otlp_encoding.h"
#include "telemetry/metrics/meter_provider.h"

namespace gym::exporters {
namespace {

namespace common = opentelemetry::proto::common::v1;
namespace trace = opentelemetry::proto::trace::v1;
using telemetry::AttributeValue;
using telemetry::SpanData;

template <std::size_t N>
std::string bytes_of(const std::array<std::uint8_t, N>& id) {
  return std::string(reinterpret_cast<const char*>(id.data()), N);
}

void set_value(const AttributeValue& v, common::AnyValue& out) {
  if (const auto* s = std::get_if<std::string>(&v)) out.set_string_value(*s);
  if (const auto* b = std::get_if<bool>(&v)) out.set_bool_value(*b);
  if (const auto* i = std::get_if<std::int64_t>(&v)) out.set_int_value(*i);
  if (const auto* d = std::get_if<double>(&v)) out.set_double_value(*d);
}

template <class Attributes>
void set_attributes(const Attributes& in,
                    google::protobuf::RepeatedPtrField<common::KeyValue>& out) {
  for (const auto& a : in) {
    common::KeyValue* kv = out.Add();
    kv->set_key(std::string(std::string_view(a.key)));
    set_value(a.value, *kv->mutable_value());
  }
}

// The reference: the request as libprotobuf's generated classes build it.
ExportTraceServiceRequest reference(const telemetry::Resource& resource,
                                    const telemetry::InstrumentationScope& scope,
                                    const std::vector<SpanData>& spans) {
  ExportTraceServiceRequest request;
  trace::ResourceSpans* rs = request.add_resource_spans();
  set_attributes(resource.attributes, *rs->mutable_resource()->mutable_attributes());
  trace::ScopeSpans* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name(scope.name);
  ss->mutable_scope()->set_version(scope.version);
  for (const auto& s : spans) {
    trace::Span* out = ss->add_spans();
    out->set_trace_id(bytes_of(s.trace_id));
    out->set_span_id(bytes_of(s.span_id));
    if (!telemetry::is_zero(s.parent_span_id)) out->set_parent_span_id(bytes_of(s.parent_span_id));
    out->set_trace_state(s.trace_state);
    out->set_flags(s.sampled ? 1u : 0u);
    out->set_name(s.name);
    out->set_kind(static_cast<trace::Span::SpanKind>(static_cast<int>(s.kind)));
    out->set_start_time_unix_nano(s.start_time_unix_nano);
    out->set_end_time_unix_nano(s.end_time_unix_nano);
    set_attributes(s.attributes, *out->mutable_attributes());
    for (const auto& e : s.events) {
      trace::Span::Event* event = out->add_events();
      event->set_time_unix_nano(e.time_unix_nano);
      event->set_name(e.name);
      set_attributes(e.attributes, *event->mutable_attributes());
    }
    if (s.status != telemetry::StatusCode::unset || !s.status_message.empty()) {
      out->mutable_status()->set_code(
          static_cast<trace::Status::StatusCode>(static_cast<int>(s.status)));
      out->mutable_status()->set_message(s.status_message);
    }
  }
  return request;
}

telemetry::Resource a_resource() {
  telemetry::Resource r;
  r.attributes = telemetry::AttributeSet{{"service.name", "nemo-gym/mcqa"},
                                         {"process.pid", 41237},
                                         {"nv.dl.world_size", 1},
                                         {"host.arch", "amd64"}};
  return r;
}

// The batch an exporter is handed: each span behind its own pointer, as the processor queues them.
std::vector<std::unique_ptr<SpanData>> batch(const std::vector<SpanData>& spans) {
  std::vector<std::unique_ptr<SpanData>> out;
  for (const auto& s : spans) out.push_back(std::make_unique<SpanData>(s));
  return out;
}

void expect_same_as_libprotobuf(const telemetry::Resource& resource,
                                const telemetry::InstrumentationScope& scope,
                                const std::vector<SpanData>& spans) {
  const std::string ours = encode_spans_protobuf(resource, scope, batch(spans));
  const ExportTraceServiceRequest expected = reference(resource, scope, spans);
  EXPECT_EQ(ours, expected.SerializeAsString());
  ExportTraceServiceRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(ours));
  std::string diff;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differencer.Compare(expected, parsed)) << diff;
}

SpanData a_span(std::uint8_t seed) {
  SpanData s;
  for (std::size_t i = 0; i < s.trace_id.size(); ++i)
    s.trace_id[i] = static_cast<std::uint8_t>(seed + i);
  for (std::size_t i = 0; i < s.span_id.size(); ++i)
    s.span_id[i] = static_cast<std::uint8_t>(seed * 3 + i + 1);
  s.name = "POST /verify";
  s.kind = telemetry::SpanKind::server;
  s.start_time_unix_nano = 1'764'633'600'000'000'000ULL + seed;
  s.end_time_unix_nano = s.start_time_unix_nano + 1'234'567;
  s.attributes.push_back({"http.request.method", std::string("POST")});
  s.attributes.push_back({"http.response.status_code", std::int64_t{200}});
  return s;
}

TEST(OtlpSpanProto, AnEmptyBatchIsTheResourceAndScopeAlone) {
  expect_same_as_libprotobuf(a_resource(), telemetry::gym_scope(), {});
  expect_same_as_libprotobuf(telemetry::Resource{}, telemetry::InstrumentationScope{}, {});
}

TEST(OtlpSpanProto, EveryFieldAndAttributeTypeMatchesLibprotobuf) {
  std::vector<SpanData> spans;
  spans.push_back(a_span(1));  // a root
  SpanData child = a_span(2);
  child.parent_span_id = spans[0].span_id;
  child.trace_state = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";
  child.kind = telemetry::SpanKind::client;
  child.name = "HTTP POST";
  child.attributes.push_back({"url.full", std::string("http://127.0.0.1:8000/verify")});
  child.attributes.push_back({"negative", std::int64_t{-7}});
  child.attributes.push_back({"largest", std::numeric_limits<std::int64_t>::max()});
  child.attributes.push_back({"smallest", std::numeric_limits<std::int64_t>::min()});
  child.attributes.push_back({"zero", std::int64_t{0}});
  child.attributes.push_back({"ratio", 0.125});
  child.attributes.push_back({"negative zero", -0.0});
  child.attributes.push_back({"yes", true});
  child.attributes.push_back({"no", false});
  child.attributes.push_back({"empty", std::string()});
  child.attributes.push_back({"", std::string("a value without a key")});
  child.attributes.push_back({"unicode", std::string("r\xC3\xA9ponse \xE2\x9C\x93")});
  child.events.push_back({"exception",
                          child.end_time_unix_nano,
                          {{"exception.type", std::string("RequestError")},
                           {"exception.message", std::string("connection refused")}}});
  child.events.push_back({"bare", 0, {}});
  child.status = telemetry::StatusCode::error;
  child.status_message = "connection refused";
  spans.push_back(child);
  SpanData ok = a_span(3);
  ok.status = telemetry::StatusCode::ok;
  ok.kind = telemetry::SpanKind::internal;
  spans.push_back(ok);
  SpanData unsampled = a_span(4);
  unsampled.sampled = false;
  unsampled.attributes.clear();
  spans.push_back(unsampled);
  SpanData message_only = a_span(5);
  message_only.status_message = "kept although the code is unset";
  spans.push_back(message_only);
  expect_same_as_libprotobuf(a_resource(), telemetry::gym_scope(), spans);
}

// Random batches: sizes that cross every varint length boundary of the nested lengths.
TEST(OtlpSpanProto, RandomBatchesMatchLibprotobuf) {
  std::mt19937 rng(20261202);
  for (int round = 0; round < 40; ++round) {
    std::vector<SpanData> spans;
    const int n = static_cast<int>(rng() % 300);
    for (int i = 0; i < n; ++i) {
      SpanData s = a_span(static_cast<std::uint8_t>(rng()));
      if (rng() % 2) s.parent_span_id = s.span_id, s.parent_span_id[0] ^= 0x5a;
      s.name = std::string(rng() % 200, 'n');
      const int attrs = static_cast<int>(rng() % 6);
      for (int a = 0; a < attrs; ++a) {
        switch (rng() % 4) {
          case 0:
            s.attributes.push_back(
                {a % 2 ? telemetry::SpanKey("url.full")
                       : telemetry::SpanKey(
                             "a.key.longer.than.128.bytes.to.cross.the.first.varint.boundary.of.a."
                             "length."
                             "................................................................."),
                 std::string(rng() % 300, 'v')});
            break;
          case 1:
            s.attributes.push_back({"b", rng() % 2 == 0});
            break;
          case 2:
            s.attributes.push_back(
                {"i", static_cast<std::int64_t>((std::uint64_t{rng()} << 32) | rng())});
            break;
          default:
            s.attributes.push_back({"d", static_cast<double>(rng()) / 7.0});
        }
      }
      spans.push_back(std::move(s));
    }
    SCOPED_TRACE("round " + std::to_string(round) + ", " + std::to_string(n) + " spans");
    expect_same_as_libprotobuf(a_resource(), telemetry::gym_scope(), spans);
  }
}

// What the exporters send for http/protobuf and grpc is these bytes.
TEST(OtlpSpanProto, EncodeRequestSendsTheseBytesForBothBinaryProtocols) {
  const auto spans = batch({a_span(9)});
  const std::string bytes = encode_spans_protobuf(a_resource(), telemetry::gym_scope(), spans);
  EXPECT_EQ(
      encode_request(a_resource(), telemetry::gym_scope(), spans, OtlpProtocol::http_protobuf),
      bytes);
  EXPECT_EQ(encode_request(a_resource(), telemetry::gym_scope(), spans, OtlpProtocol::grpc), bytes);
}

}  // namespace
}  // namespace gym::exporters
