#include "exporters/otlp/otlp_json.h"

#include <boost/json.hpp>

#include "core/json_text.h"

namespace gym::exporters {
namespace json = boost::json;
using telemetry::Attribute;
using telemetry::AttributeSet;
using telemetry::AttributeValue;
using telemetry::HistogramPoint;
using telemetry::MetricData;
using telemetry::MetricsSnapshot;
using telemetry::MetricType;
using telemetry::NumberPoint;

namespace {

constexpr int kCumulative = 2;  // AGGREGATION_TEMPORALITY_CUMULATIVE

json::string u64(std::uint64_t v) { return json::string(std::to_string(v)); }

}  // namespace

json::value otlp_any_value(const AttributeValue& v) {
  json::object o;
  switch (v.index()) {
    case 0:
      o["stringValue"] = std::get<std::string>(v);
      break;
    case 1:
      o["boolValue"] = std::get<bool>(v);
      break;
    case 2:
      o["intValue"] = std::to_string(std::get<std::int64_t>(v));
      break;
    default:
      o["doubleValue"] = std::get<double>(v);
      break;
  }
  return o;
}

namespace {

template <class Attributes>
json::array key_values(const Attributes& list) {
  json::array out;
  out.reserve(list.size());
  for (const auto& a : list)
    out.push_back(
        json::object{{"key", std::string_view(a.key)}, {"value", otlp_any_value(a.value)}});
  return out;
}

}  // namespace

json::array otlp_attributes(std::span<const Attribute> list) { return key_values(list); }
json::array otlp_attributes(std::span<const telemetry::SpanAttribute> list) {
  return key_values(list);
}

namespace {

json::array attributes(const AttributeSet& set) {
  return otlp_attributes(std::span<const Attribute>(set.begin(), set.end()));
}

void times(json::object& p, const MetricData& m) {
  if (m.start_time_unix_nano != 0) p["startTimeUnixNano"] = u64(m.start_time_unix_nano);
  p["timeUnixNano"] = u64(m.time_unix_nano);
}

json::array number_points(const MetricData& m) {
  json::array out;
  for (const NumberPoint& n : m.number_points()) {
    json::object p;
    p["attributes"] = attributes(n.attributes);
    times(p, m);
    if (const auto* i = std::get_if<std::int64_t>(&n.value)) {
      p["asInt"] = std::to_string(*i);
    } else {
      p["asDouble"] = std::get<double>(n.value);
    }
    out.push_back(std::move(p));
  }
  return out;
}

json::array histogram_points(const MetricData& m) {
  json::array out;
  for (const HistogramPoint& h : m.histogram_points()) {
    json::object p;
    p["attributes"] = attributes(h.attributes);
    times(p, m);
    p["count"] = u64(h.count);
    p["sum"] = h.sum;
    json::array buckets;
    for (auto c : h.bucket_counts) buckets.push_back(u64(c));
    p["bucketCounts"] = std::move(buckets);
    json::array bounds;
    for (double b : m.descriptor.bounds) bounds.push_back(b);
    p["explicitBounds"] = std::move(bounds);
    p["min"] = h.min;
    p["max"] = h.max;
    out.push_back(std::move(p));
  }
  return out;
}

json::object metric(const MetricData& m) {
  json::object o;
  o["name"] = m.descriptor.name;
  o["description"] = m.descriptor.description;
  o["unit"] = m.descriptor.unit;
  switch (m.type()) {
    case MetricType::sum:
      o["sum"] = json::object{{"dataPoints", number_points(m)},
                              {"aggregationTemporality", kCumulative},
                              {"isMonotonic", m.monotonic()}};
      break;
    case MetricType::gauge:
      o["gauge"] = json::object{{"dataPoints", number_points(m)}};
      break;
    case MetricType::histogram:
      o["histogram"] = json::object{{"dataPoints", histogram_points(m)},
                                    {"aggregationTemporality", kCumulative}};
      break;
  }
  return o;
}

}  // namespace

json::value otlp_json(const MetricsSnapshot& snapshot) {
  json::array metrics;
  metrics.reserve(snapshot.metrics.size());
  for (const MetricData& m : snapshot.metrics) metrics.push_back(metric(m));
  json::object scope{{"name", snapshot.scope.name}, {"version", snapshot.scope.version}};
  json::object scope_metrics{{"scope", std::move(scope)}, {"metrics", std::move(metrics)}};
  json::object resource{{"attributes", attributes(snapshot.resource.attributes)}};
  json::object resource_metrics{{"resource", std::move(resource)},
                                {"scopeMetrics", json::array{std::move(scope_metrics)}}};
  return json::object{{"resourceMetrics", json::array{std::move(resource_metrics)}}};
}

std::string otlp_json_text(const MetricsSnapshot& snapshot) {
  std::size_t points = 0;
  for (const MetricData& m : snapshot.metrics) {
    points += m.type() == MetricType::histogram ? m.histogram_points().size() * 4
                                                : m.number_points().size();
  }
  std::string out;
  out.reserve(1024 + 256 * points);  // avoids regrowing a large line
  core::render_json(otlp_json(snapshot), out);
  return out;
}

}  // namespace gym::exporters
