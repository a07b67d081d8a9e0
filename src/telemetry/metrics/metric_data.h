#pragma once
// The plain-data snapshot that collection produces and exporters read: resource, scope, and per
// metric its descriptor, start/end time and points. No pointers into live storage.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "telemetry/common/attributes.h"

namespace gym::telemetry {

enum class InstrumentKind {
  counter,             // monotonic sum
  up_down_counter,     // non-monotonic sum
  histogram,           // explicit-bucket histogram
  gauge,               // synchronous last value
  observable_counter,  // monotonic sum reported by a callback
  observable_gauge,    // last value reported by a callback
};

enum class ValueType { int64, float64 };

// What an instrument is: fixed at creation.
struct InstrumentDescriptor {
  std::string name;
  std::string unit;
  std::string description;
  InstrumentKind kind = InstrumentKind::counter;
  ValueType value_type = ValueType::int64;
  std::vector<double> bounds;  // histograms only: strictly increasing, inclusive upper edges

  friend bool operator==(const InstrumentDescriptor&, const InstrumentDescriptor&) = default;
};

// The OTLP data type an instrument kind exports as.
enum class MetricType { sum, gauge, histogram };

constexpr MetricType metric_type(InstrumentKind k) noexcept {
  switch (k) {
    case InstrumentKind::histogram:
      return MetricType::histogram;
    case InstrumentKind::gauge:
    case InstrumentKind::observable_gauge:
      return MetricType::gauge;
    default:
      return MetricType::sum;
  }
}

constexpr bool is_monotonic(InstrumentKind k) noexcept {
  return k == InstrumentKind::counter || k == InstrumentKind::observable_counter;
}

struct NumberPoint {
  AttributeSet attributes;
  std::variant<std::int64_t, double> value;
};

struct HistogramPoint {
  AttributeSet attributes;
  std::uint64_t count = 0;
  double sum = 0;
  double min = 0;
  double max = 0;
  std::vector<std::uint64_t> bucket_counts;  // bounds.size() + 1 entries
};

// One instrument's points. Temporality is cumulative for every metric: start is when the
// instrument was created, time is the collection time. Gauges report start = 0 (unset).
struct MetricData {
  InstrumentDescriptor descriptor;
  std::uint64_t start_time_unix_nano = 0;
  std::uint64_t time_unix_nano = 0;
  std::variant<std::vector<NumberPoint>, std::vector<HistogramPoint>> points;

  MetricType type() const noexcept { return metric_type(descriptor.kind); }
  bool monotonic() const noexcept { return is_monotonic(descriptor.kind); }
  const std::vector<NumberPoint>& number_points() const { return std::get<0>(points); }
  const std::vector<HistogramPoint>& histogram_points() const { return std::get<1>(points); }
};

struct InstrumentationScope {
  std::string name;
  std::string version;
};

struct Resource {
  AttributeSet attributes;
};

// One collection of one provider: everything an exporter needs.
struct MetricsSnapshot {
  Resource resource;
  InstrumentationScope scope;
  std::vector<MetricData> metrics;  // instruments with at least one point, in creation order
};

}  // namespace gym::telemetry
