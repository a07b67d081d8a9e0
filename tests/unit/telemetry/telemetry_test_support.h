#pragma once
// Shared helpers of the telemetry unit tests: finding metrics and points in a snapshot.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/config.h"

#include "telemetry/metrics/metric_data.h"

namespace gym::telemetry::testing {

// An environment for settings tests; the process environment is never touched.
class FakeEnv {
 public:
  void set(const std::string& name, const std::string& value) { vars_[name] = value; }
  core::GetEnv get() const {
    return [this](const std::string& name) -> std::optional<std::string> {
      auto it = vars_.find(name);
      if (it == vars_.end()) return std::nullopt;
      return it->second;
    };
  }

 private:
  std::map<std::string, std::string> vars_;
};

inline const MetricData* find_metric(const MetricsSnapshot& s, std::string_view name) {
  for (const auto& m : s.metrics) {
    if (m.descriptor.name == name) return &m;
  }
  return nullptr;
}

inline const NumberPoint* find_point(const MetricData& m, const AttributeSet& attrs) {
  for (const auto& p : m.number_points()) {
    if (p.attributes == attrs) return &p;
  }
  return nullptr;
}

inline const HistogramPoint* find_histogram_point(const MetricData& m, const AttributeSet& attrs) {
  for (const auto& p : m.histogram_points()) {
    if (p.attributes == attrs) return &p;
  }
  return nullptr;
}

// The int64 value of the point of `name` with `attrs`; fails the test when absent.
inline std::int64_t int_value(const MetricsSnapshot& s, std::string_view name,
                              const AttributeSet& attrs = {}) {
  const MetricData* m = find_metric(s, name);
  if (!m) {
    ADD_FAILURE() << "no metric " << name;
    return -1;
  }
  const NumberPoint* p = find_point(*m, attrs);
  if (!p) {
    ADD_FAILURE() << "no point of " << name;
    return -1;
  }
  return std::get<std::int64_t>(p->value);
}

inline double double_value(const MetricsSnapshot& s, std::string_view name,
                           const AttributeSet& attrs = {}) {
  const MetricData* m = find_metric(s, name);
  if (!m) {
    ADD_FAILURE() << "no metric " << name;
    return -1;
  }
  const NumberPoint* p = find_point(*m, attrs);
  if (!p) {
    ADD_FAILURE() << "no point of " << name;
    return -1;
  }
  return std::get<double>(p->value);
}

}  // namespace gym::telemetry::testing
