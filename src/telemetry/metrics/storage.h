#pragma once
// Per-instrument storage: the descriptor, the series, and how they become points at collection.
// Owned by the MeterProvider; instruments and bound handles point into it.
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "telemetry/common/attributes.h"
#include "telemetry/metrics/cells.h"
#include "telemetry/metrics/metric_data.h"
#include "telemetry/metrics/series_table.h"

namespace gym::telemetry {

class InstrumentStorage {
 public:
  InstrumentStorage(InstrumentDescriptor descriptor, std::uint64_t start_unix_nano,
                    std::size_t cardinality_limit);
  virtual ~InstrumentStorage() = default;
  InstrumentStorage(const InstrumentStorage&) = delete;
  InstrumentStorage& operator=(const InstrumentStorage&) = delete;

  const InstrumentDescriptor& descriptor() const noexcept { return descriptor_; }

  // Appends this instrument's metric to `out` when it has at least one point. Safe while other
  // threads record.
  virtual void collect(std::uint64_t now_unix_nano, std::vector<MetricData>& out) = 0;

  // Reports a rejected value: the first one per instrument is logged, all are counted.
  void report_dropped(double value, const char* accepts) noexcept;
  std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

 protected:
  void report_overflow() noexcept;  // logs once per instrument
  // Runs an observable callback; an exception is logged (once per instrument) and makes this
  // collection skip the instrument.
  bool run_guarded(const std::function<void()>& call) noexcept;
  MetricData start_metric(std::uint64_t now_unix_nano) const;

  const InstrumentDescriptor descriptor_;
  const std::uint64_t start_unix_nano_;
  const std::size_t cardinality_limit_;

 private:
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<bool> overflow_logged_{false};
  std::atomic<bool> callback_error_logged_{false};
};

// Storage of a synchronous instrument whose kind is described by `Rule` (cells.h).
template <class Rule>
class SyncStorage final : public InstrumentStorage {
 public:
  using Cell = typename Rule::Cell;
  using Value = typename Rule::Value;

  SyncStorage(InstrumentDescriptor d, std::uint64_t start, std::size_t limit)
      : InstrumentStorage(std::move(d), start, limit), table_(limit, cell_config()) {}

  // The hot path of unbound recording: no lock and no allocation for a known attribute set.
  void record(Value v, std::span<const AttributeView> attributes) noexcept {
    if (!Rule::valid(v)) [[unlikely]] {
      report_dropped(static_cast<double>(v), Rule::kAccepts);
      return;
    }
    SortedAttributes key(attributes);
    Rule::apply(table_.get(key).cell, v);
  }

  void record(Value v, const AttributeSet& attributes) noexcept {
    if (!Rule::valid(v)) [[unlikely]] {
      report_dropped(static_cast<double>(v), Rule::kAccepts);
      return;
    }
    Rule::apply(table_.get(attributes).cell, v);
  }

  Cell& cell(std::span<const AttributeView> attributes) {
    SortedAttributes key(attributes);
    return table_.get(key).cell;
  }
  Cell& cell(const AttributeSet& attributes) { return table_.get(attributes).cell; }

  void collect(std::uint64_t now, std::vector<MetricData>& out) override;

 private:
  typename Cell::Config cell_config() const {
    if constexpr (std::is_same_v<Cell, HistogramCell>) {
      return std::span<const double>(descriptor_.bounds);
    } else {
      return {};
    }
  }

  SeriesTable<Cell> table_;
};

template <class Rule>
void SyncStorage<Rule>::collect(std::uint64_t now, std::vector<MetricData>& out) {
  const auto series = table_.series();
  if (table_.overflowed()) report_overflow();
  MetricData metric = start_metric(now);
  if constexpr (std::is_same_v<Cell, HistogramCell>) {
    std::vector<HistogramPoint> points;
    const std::size_t n = descriptor_.bounds.size() + 1;
    for (const auto* s : series) {
      const HistogramCell& c = s->cell;
      HistogramPoint p;
      p.bucket_counts.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        p.bucket_counts[i] = c.bucket_count(i);
        p.count += p.bucket_counts[i];
      }
      if (p.count == 0) continue;
      p.sum = c.sum();
      p.min = c.min();
      p.max = c.max();
      p.attributes = s->attributes;
      points.push_back(std::move(p));
    }
    if (points.empty()) return;
    metric.points = std::move(points);
  } else {
    std::vector<NumberPoint> points;
    for (const auto* s : series) {
      if (!s->cell.recorded.load(std::memory_order_relaxed)) continue;
      points.push_back({s->attributes, s->cell.total()});
    }
    if (points.empty()) return;
    metric.points = std::move(points);
  }
  out.push_back(std::move(metric));
}

// What an observable instrument's callback writes into at collection. One value per attribute
// set: observing a set twice keeps the last value. At most the cardinality limit of sets; later
// sets go to the overflow series (summed for counters, last value for gauges).
template <MetricValue T>
class ObservableResult {
 public:
  void observe(T value, AttributeList attributes = {}) {
    SortedAttributes key(std::span<const AttributeView>(attributes.begin(), attributes.size()));
    observe_key(value, key);
  }
  void observe(T value, const AttributeSet& attributes) { observe_key(value, attributes); }

 private:
  template <MetricValue U>
  friend class ObservableStorage;

  ObservableResult(InstrumentStorage& owner, bool monotonic, std::size_t limit)
      : owner_(owner), monotonic_(monotonic), limit_(limit) {}

  template <class Key>
  void observe_key(T value, const Key& key);

  InstrumentStorage& owner_;
  const bool monotonic_;
  const std::size_t limit_;
  bool overflowed_ = false;
  std::unordered_map<AttributeSet, std::size_t, AttributeSetHash, AttributeSetEqual> index_;
  std::vector<NumberPoint> points_;
};

template <MetricValue T>
template <class Key>
void ObservableResult<T>::observe_key(T value, const Key& key) {
  if (!detail::finite(value) || (monotonic_ && value < 0)) {
    owner_.report_dropped(static_cast<double>(value),
                          monotonic_ ? "non-negative finite values" : "finite values");
    return;
  }
  auto it = index_.find(key);  // heterogeneous: no AttributeSet is built for a known set
  if (it != index_.end()) {
    points_[it->second].value = value;
    return;
  }
  if (index_.size() >= limit_) {
    AttributeSet overflow{{"otel.metric.overflow", true}};
    it = index_.find(overflow);
    overflowed_ = true;
    if (it != index_.end()) {
      auto& slot = std::get<T>(points_[it->second].value);
      slot = monotonic_ ? slot + value : value;
      return;
    }
    index_.emplace(overflow, points_.size());
    points_.push_back({std::move(overflow), value});
    return;
  }
  AttributeSet owned(key);
  index_.emplace(owned, points_.size());
  points_.push_back({std::move(owned), value});
}

template <MetricValue T>
using ObservableCallback = std::function<void(ObservableResult<T>&)>;

template <MetricValue T>
class ObservableStorage final : public InstrumentStorage {
 public:
  ObservableStorage(InstrumentDescriptor d, std::uint64_t start, std::size_t limit,
                    ObservableCallback<T> callback)
      : InstrumentStorage(std::move(d), start, limit), callback_(std::move(callback)) {}

  void collect(std::uint64_t now, std::vector<MetricData>& out) override {
    ObservableResult<T> result(*this, is_monotonic(descriptor_.kind), cardinality_limit_);
    if (!run_callback(result)) return;
    if (result.overflowed_) report_overflow();
    if (result.points_.empty()) return;
    MetricData metric = start_metric(now);
    metric.points = std::move(result.points_);
    out.push_back(std::move(metric));
  }

 private:
  bool run_callback(ObservableResult<T>& result) noexcept;

  ObservableCallback<T> callback_;
};

template <MetricValue T>
bool ObservableStorage<T>::run_callback(ObservableResult<T>& result) noexcept {
  return run_guarded([&] { callback_(result); });
}

}  // namespace gym::telemetry
