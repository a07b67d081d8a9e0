// OTLP/JSON ExportMetricsServiceRequest -> plain data (otlp_json_decode.h).
#include "exporters/otlp/otlp_json_decode.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <span>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <boost/json.hpp>

namespace gym::exporters {
namespace json = boost::json;
using telemetry::Attribute;
using telemetry::AttributeSet;
using telemetry::AttributeView;
using telemetry::MetricType;
using telemetry::NumberPoint;

namespace {

const json::value* member(const json::object& o, std::string_view name) {
  return o.if_contains(name);
}

const json::array* array_member(const json::object& o, std::string_view name,
                                std::string_view what) {
  const json::value* v = member(o, name);
  if (!v) return nullptr;  // OTLP/JSON omits empty repeated fields
  if (!v->is_array()) throw OtlpJsonError(fmt::format("{} of {} is not an array", name, what));
  return &v->get_array();
}

const json::object& as_object(const json::value& v, std::string_view what) {
  if (!v.is_object()) throw OtlpJsonError(fmt::format("{} is not an object", what));
  return v.get_object();
}

// 64-bit integers are decimal strings in OTLP/JSON; plain numbers are accepted as well.
std::int64_t to_int64(const json::value& v, std::string_view what) {
  if (const auto* s = v.if_string()) {
    std::int64_t out = 0;
    auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), out);
    if (ec == std::errc() && end == s->data() + s->size()) return out;
  } else if (const auto* i = v.if_int64()) {
    return *i;
  } else if (const auto* u = v.if_uint64()) {
    if (*u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return static_cast<std::int64_t>(*u);
    }
  } else if (const auto* d = v.if_double()) {
    if (std::isfinite(*d) && *d == std::trunc(*d) && std::fabs(*d) < 9.2e18) {
      return static_cast<std::int64_t>(*d);
    }
  }
  throw OtlpJsonError(fmt::format("{} is not a 64-bit integer", what));
}

std::uint64_t to_uint64(const json::value& v, std::string_view what) {
  if (const auto* s = v.if_string()) {
    std::uint64_t out = 0;
    auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), out);
    if (ec == std::errc() && end == s->data() + s->size()) return out;
    throw OtlpJsonError(fmt::format("{} is not an unsigned 64-bit integer", what));
  }
  if (const auto* u = v.if_uint64()) return *u;
  std::int64_t i = to_int64(v, what);
  if (i < 0) throw OtlpJsonError(fmt::format("{} is negative", what));
  return static_cast<std::uint64_t>(i);
}

// Doubles are JSON numbers; the protobuf JSON mapping writes non-finite ones as strings.
double to_double(const json::value& v, std::string_view what) {
  if (const auto* d = v.if_double()) return *d;
  if (const auto* i = v.if_int64()) return static_cast<double>(*i);
  if (const auto* u = v.if_uint64()) return static_cast<double>(*u);
  if (const auto* s = v.if_string()) {
    if (*s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (*s == "Infinity") return std::numeric_limits<double>::infinity();
    if (*s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  throw OtlpJsonError(fmt::format("{} is not a number", what));
}

// An attribute list; values other than string, bool, int and double (arrays, maps, bytes) are
// left out.
AttributeSet to_attributes(const json::object& holder, std::string_view what) {
  const json::array* list = array_member(holder, "attributes", what);
  if (!list) return {};
  std::vector<Attribute> owned;
  owned.reserve(list->size());
  for (const json::value& item : *list) {
    const json::object& kv = as_object(item, "an attribute");
    const json::value* k = member(kv, "key");
    const json::value* v = member(kv, "value");
    if (!k || !k->is_string())
      throw OtlpJsonError(fmt::format("an attribute of {} has no key", what));
    if (!v || !v->is_object()) continue;  // an empty AnyValue
    const json::object& any = v->get_object();
    std::string name(k->get_string());
    if (const json::value* s = member(any, "stringValue"); s && s->is_string()) {
      owned.push_back({std::move(name), std::string(s->get_string())});
    } else if (const json::value* i = member(any, "intValue")) {
      owned.push_back({std::move(name), to_int64(*i, "intValue")});
    } else if (const json::value* d = member(any, "doubleValue")) {
      owned.push_back({std::move(name), to_double(*d, "doubleValue")});
    } else if (const json::value* b = member(any, "boolValue"); b && b->is_bool()) {
      owned.push_back({std::move(name), b->get_bool()});
    }
  }
  std::vector<AttributeView> views;
  views.reserve(owned.size());
  for (const Attribute& a : owned) views.emplace_back(a);
  return AttributeSet(std::span<const AttributeView>(views));
}

NumberPoint to_number_point(const json::object& p) {
  NumberPoint out;
  out.attributes = to_attributes(p, "a data point");
  if (const json::value* i = member(p, "asInt")) {
    out.value = to_int64(*i, "asInt");
  } else if (const json::value* d = member(p, "asDouble")) {
    out.value = to_double(*d, "asDouble");
  } else {
    throw OtlpJsonError("a number data point has neither asInt nor asDouble");
  }
  return out;
}

DecodedHistogramPoint to_histogram_point(const json::object& p) {
  DecodedHistogramPoint out;
  out.attributes = to_attributes(p, "a data point");
  BucketHistogram& h = out.histogram;
  if (const json::value* c = member(p, "count")) h.count = to_uint64(*c, "count");
  if (const json::value* s = member(p, "sum")) h.sum = to_double(*s, "sum");
  if (const json::value* m = member(p, "min")) h.min = to_double(*m, "min");
  if (const json::value* m = member(p, "max")) h.max = to_double(*m, "max");
  if (const json::array* b = array_member(p, "explicitBounds", "a histogram point")) {
    for (const json::value& v : *b) h.bounds.push_back(to_double(v, "explicitBounds"));
  }
  if (const json::array* b = array_member(p, "bucketCounts", "a histogram point")) {
    for (const json::value& v : *b) h.bucket_counts.push_back(to_uint64(v, "bucketCounts"));
  }
  // OTLP allows a point without buckets (count and sum only); anything else must line up.
  if (!h.bucket_counts.empty() && h.bucket_counts.size() != h.bounds.size() + 1) {
    throw OtlpJsonError(fmt::format("a histogram point has {} bucket counts for {} bounds",
                                    h.bucket_counts.size(), h.bounds.size()));
  }
  return out;
}

// Metrics of other types (exponential histograms, summaries) yield nullopt.
std::optional<DecodedMetric> to_metric(const json::object& m) {
  const json::value* name = member(m, "name");
  if (!name || !name->is_string()) throw OtlpJsonError("a metric has no name");
  DecodedMetric out;
  out.name = std::string(name->get_string());
  const std::string what = "metric " + out.name;
  const json::object* data = nullptr;
  if (const json::value* v = member(m, "histogram")) {
    out.type = MetricType::histogram;
    data = &as_object(*v, what);
  } else if (const json::value* v = member(m, "sum")) {
    out.type = MetricType::sum;
    data = &as_object(*v, what);
  } else if (const json::value* v = member(m, "gauge")) {
    out.type = MetricType::gauge;
    data = &as_object(*v, what);
  } else {
    return std::nullopt;
  }
  if (const json::array* points = array_member(*data, "dataPoints", what)) {
    for (const json::value& p : *points) {
      const json::object& point = as_object(p, "a data point of " + out.name);
      if (out.type == MetricType::histogram) {
        out.histograms.push_back(to_histogram_point(point));
      } else {
        out.numbers.push_back(to_number_point(point));
      }
    }
  }
  return out;
}

}  // namespace

std::vector<DecodedResourceMetrics> decode_otlp_json(const json::object& request) {
  std::vector<DecodedResourceMetrics> out;
  const json::array* entries = array_member(request, "resourceMetrics", "the request");
  if (!entries) return out;
  for (const json::value& e : *entries) {
    const json::object& entry = as_object(e, "a resourceMetrics entry");
    DecodedResourceMetrics data;
    if (const json::value* r = member(entry, "resource")) {
      data.resource = to_attributes(as_object(*r, "a resource"), "the resource");
    }
    if (const json::array* scopes = array_member(entry, "scopeMetrics", "resourceMetrics")) {
      for (const json::value& s : *scopes) {
        const json::object& scope = as_object(s, "a scopeMetrics entry");
        const json::array* metrics = array_member(scope, "metrics", "scopeMetrics");
        if (!metrics) continue;
        for (const json::value& m : *metrics) {
          if (auto parsed = to_metric(as_object(m, "a metric"))) {
            data.metrics.push_back(std::move(*parsed));
          }
        }
      }
    }
    out.push_back(std::move(data));
  }
  return out;
}

}  // namespace gym::exporters
