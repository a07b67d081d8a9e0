#include "exporters/otlp/otlp_encoding.h"

#include <google/protobuf/arena.h>
#include <boost/json.hpp>

#include <array>

#include "exporters/otlp/otlp_json.h"
#include "exporters/otlp/otlp_span_log_json.h"
#include "exporters/otlp/otlp_span_proto.h"

namespace gym::exporters {
namespace {

namespace common = opentelemetry::proto::common::v1;
namespace metrics = opentelemetry::proto::metrics::v1;
using telemetry::AttributeSet;
using telemetry::AttributeValue;
using telemetry::MetricData;
using telemetry::MetricType;

void set_value(const AttributeValue& v, common::AnyValue& out) {
  switch (v.index()) {
    case 0:
      out.set_string_value(std::get<std::string>(v));
      break;
    case 1:
      out.set_bool_value(std::get<bool>(v));
      break;
    case 2:
      out.set_int_value(std::get<std::int64_t>(v));
      break;
    default:
      out.set_double_value(std::get<double>(v));
      break;
  }
}

template <class Attributes>
void set_attributes(const Attributes& set,
                    google::protobuf::RepeatedPtrField<common::KeyValue>& out) {
  out.Reserve(static_cast<int>(set.size()));
  for (const auto& a : set) {
    common::KeyValue* kv = out.Add();
    kv->set_key(a.key);
    set_value(a.value, *kv->mutable_value());
  }
}

void number_points(const MetricData& m,
                   google::protobuf::RepeatedPtrField<metrics::NumberDataPoint>& out) {
  out.Reserve(static_cast<int>(m.number_points().size()));
  for (const auto& n : m.number_points()) {
    metrics::NumberDataPoint* p = out.Add();
    set_attributes(n.attributes, *p->mutable_attributes());
    p->set_start_time_unix_nano(m.start_time_unix_nano);
    p->set_time_unix_nano(m.time_unix_nano);
    if (const auto* i = std::get_if<std::int64_t>(&n.value)) {
      p->set_as_int(*i);
    } else {
      p->set_as_double(std::get<double>(n.value));
    }
  }
}

void histogram_points(const MetricData& m,
                      google::protobuf::RepeatedPtrField<metrics::HistogramDataPoint>& out) {
  out.Reserve(static_cast<int>(m.histogram_points().size()));
  for (const auto& h : m.histogram_points()) {
    metrics::HistogramDataPoint* p = out.Add();
    set_attributes(h.attributes, *p->mutable_attributes());
    p->set_start_time_unix_nano(m.start_time_unix_nano);
    p->set_time_unix_nano(m.time_unix_nano);
    p->set_count(h.count);
    p->set_sum(h.sum);
    p->set_min(h.min);
    p->set_max(h.max);
    p->mutable_bucket_counts()->Add(h.bucket_counts.begin(), h.bucket_counts.end());
    p->mutable_explicit_bounds()->Add(m.descriptor.bounds.begin(), m.descriptor.bounds.end());
  }
}

}  // namespace

void fill_otlp_proto(const telemetry::MetricsSnapshot& snapshot,
                     ExportMetricsServiceRequest& request) {
  metrics::ResourceMetrics* rm = request.add_resource_metrics();
  set_attributes(snapshot.resource.attributes, *rm->mutable_resource()->mutable_attributes());
  metrics::ScopeMetrics* sm = rm->add_scope_metrics();
  sm->mutable_scope()->set_name(snapshot.scope.name);
  sm->mutable_scope()->set_version(snapshot.scope.version);
  sm->mutable_metrics()->Reserve(static_cast<int>(snapshot.metrics.size()));
  for (const MetricData& m : snapshot.metrics) {
    metrics::Metric* out = sm->add_metrics();
    out->set_name(m.descriptor.name);
    out->set_description(m.descriptor.description);
    out->set_unit(m.descriptor.unit);
    switch (m.type()) {
      case MetricType::sum: {
        metrics::Sum* sum = out->mutable_sum();
        sum->set_aggregation_temporality(metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
        sum->set_is_monotonic(m.monotonic());
        number_points(m, *sum->mutable_data_points());
        break;
      }
      case MetricType::gauge:
        number_points(m, *out->mutable_gauge()->mutable_data_points());
        break;
      case MetricType::histogram: {
        metrics::Histogram* h = out->mutable_histogram();
        h->set_aggregation_temporality(metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
        histogram_points(m, *h->mutable_data_points());
        break;
      }
    }
  }
}

ExportMetricsServiceRequest to_otlp_proto(const telemetry::MetricsSnapshot& snapshot) {
  ExportMetricsServiceRequest request;
  fill_otlp_proto(snapshot, request);
  return request;
}

std::string encode_request(const telemetry::MetricsSnapshot& snapshot, OtlpProtocol protocol) {
  if (protocol == OtlpProtocol::http_json) return otlp_json_text(snapshot);
  // An arena turns the thousands of small message allocations into a few blocks.
  google::protobuf::Arena arena;
  auto* request = google::protobuf::Arena::CreateMessage<ExportMetricsServiceRequest>(&arena);
  fill_otlp_proto(snapshot, *request);
  return request->SerializeAsString();
}

namespace {

namespace logs = opentelemetry::proto::logs::v1;

template <std::size_t N>
std::string bytes_of(const std::array<std::uint8_t, N>& id) {
  return std::string(reinterpret_cast<const char*>(id.data()), N);
}

template <class Scoped>
void set_scope(const telemetry::InstrumentationScope& scope, Scoped& out) {
  out.mutable_scope()->set_name(scope.name);
  out.mutable_scope()->set_version(scope.version);
}

// The protobuf bytes of a request `fill` builds; an arena turns the many small message
// allocations into a few blocks.
template <class Message, class Fill>
std::string encode(const Fill& fill) {
  google::protobuf::Arena arena;
  auto* request = google::protobuf::Arena::CreateMessage<Message>(&arena);
  fill(*request);
  return request->SerializeAsString();
}

}  // namespace

void fill_otlp_proto(const telemetry::Resource& resource,
                     const telemetry::InstrumentationScope& scope,
                     std::span<const telemetry::LogRecordData> records,
                     ExportLogsServiceRequest& request) {
  logs::ResourceLogs* rl = request.add_resource_logs();
  set_attributes(resource.attributes, *rl->mutable_resource()->mutable_attributes());
  logs::ScopeLogs* sl = rl->add_scope_logs();
  set_scope(scope, *sl);
  sl->mutable_log_records()->Reserve(static_cast<int>(records.size()));
  for (const auto& r : records) {
    logs::LogRecord* out = sl->add_log_records();
    out->set_time_unix_nano(r.time_unix_nano);
    out->set_observed_time_unix_nano(r.observed_time_unix_nano);
    out->set_severity_number(static_cast<logs::SeverityNumber>(r.severity_number));
    out->set_severity_text(r.severity_text);
    out->mutable_body()->set_string_value(r.body);
    if (!r.logger.empty()) {
      common::KeyValue* kv = out->add_attributes();
      kv->set_key("logger.name");
      kv->mutable_value()->set_string_value(r.logger);
    }
    if (!telemetry::is_zero(r.trace_id)) {
      out->set_trace_id(bytes_of(r.trace_id));
      out->set_span_id(bytes_of(r.span_id));
      out->set_flags(r.sampled ? 1u : 0u);
    }
  }
}

std::string encode_request(const telemetry::Resource& resource,
                           const telemetry::InstrumentationScope& scope, telemetry::SpanBatch spans,
                           OtlpProtocol protocol) {
  if (protocol == OtlpProtocol::http_json)
    return boost::json::serialize(otlp_trace_json(resource, scope, spans));
  return encode_spans_protobuf(resource, scope, spans);
}

std::string encode_request(const telemetry::Resource& resource,
                           const telemetry::InstrumentationScope& scope,
                           std::span<const telemetry::LogRecordData> records,
                           OtlpProtocol protocol) {
  if (protocol == OtlpProtocol::http_json)
    return boost::json::serialize(otlp_logs_json(resource, scope, records));
  return encode<ExportLogsServiceRequest>(
      [&](ExportLogsServiceRequest& r) { fill_otlp_proto(resource, scope, records, r); });
}

const char* content_type(OtlpProtocol protocol) {
  switch (protocol) {
    case OtlpProtocol::grpc:
      return "application/grpc";
    case OtlpProtocol::http_protobuf:
      return "application/x-protobuf";
    case OtlpProtocol::http_json:
      return "application/json";
  }
  return "application/x-protobuf";
}

}  // namespace gym::exporters
