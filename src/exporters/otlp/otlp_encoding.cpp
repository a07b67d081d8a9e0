#include "exporters/otlp/otlp_encoding.h"

#include <google/protobuf/arena.h>

#include "exporters/otlp/otlp_json.h"

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

void set_attributes(const AttributeSet& set,
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
