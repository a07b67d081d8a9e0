#pragma once
// OTLP/JSON ExportMetricsServiceRequest -> plain data: the reverse of otlp_json.h, for readers of
// what an OTLP/JSON exporter wrote (`gym telemetry report` reads the console exporter's lines).
// It reads any OTLP/JSON producer, not only ours: 64-bit integers as decimal strings or plain
// numbers, non-finite doubles as "NaN"/"Infinity"/"-Infinity", empty repeated fields omitted,
// histogram bounds per point, min and max optional.
//
// What it keeps: resource attributes; per metric its name, type (sum, gauge, histogram) and
// points with their attributes. Left out: scopes, descriptions, units, times, temporality;
// metrics of other types (exponential histograms, summaries); attribute values other than
// string, bool, int and double (arrays, maps, bytes).
//
// Pure functions: no I/O, no shared state.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "telemetry/metrics/metric_data.h"

namespace gym::exporters {

// Explicit-bucket histogram data as exported (or the sum of several such points).
struct BucketHistogram {
  std::vector<double> bounds;                // inclusive upper edges, strictly increasing
  std::vector<std::uint64_t> bucket_counts;  // bounds.size() + 1 entries; the last is overflow
  std::uint64_t count = 0;
  double sum = 0;
  std::optional<double> min;  // OTLP makes min and max optional; absent means unknown
  std::optional<double> max;
};

struct DecodedHistogramPoint {
  telemetry::AttributeSet attributes;
  BucketHistogram histogram;
};

struct DecodedMetric {
  std::string name;
  telemetry::MetricType type = telemetry::MetricType::gauge;
  std::vector<telemetry::NumberPoint> numbers;    // sum and gauge points
  std::vector<DecodedHistogramPoint> histograms;  // histogram points
};

// One resourceMetrics entry: its resource, and the metrics of all its scopes in order.
struct DecodedResourceMetrics {
  telemetry::AttributeSet resource;
  std::vector<DecodedMetric> metrics;
};

// A request that does not have the shape OTLP/JSON gives it; what() says which part, e.g.
// "a histogram point has 3 bucket counts for 1 bounds".
struct OtlpJsonError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The resourceMetrics entries of `request` (a parsed ExportMetricsServiceRequest), in order.
// Throws OtlpJsonError when a part has the wrong shape (a member that is not an array or an
// object, an integer that is not one, a number data point with no value, bucket counts that do
// not match the bounds); nothing is returned for a request that throws.
std::vector<DecodedResourceMetrics> decode_otlp_json(const boost::json::object& request);

}  // namespace gym::exporters
