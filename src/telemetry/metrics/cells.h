#pragma once
// The per-series state of each synchronous instrument kind, and the rule each kind applies to a
// value before recording it. Every cell is a few atomics updated with relaxed operations: any
// number of threads may record into one cell while another thread reads it.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <type_traits>

namespace gym::telemetry {

template <class T>
concept MetricValue = std::same_as<T, std::int64_t> || std::same_as<T, double>;

namespace detail {

inline void mark(std::atomic<bool>& recorded) noexcept {
  // Read first: after the first record the line is only read, never written again.
  if (!recorded.load(std::memory_order_relaxed)) recorded.store(true, std::memory_order_relaxed);
}

template <MetricValue T>
bool finite(T v) noexcept {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isfinite(v);
  } else {
    return true;
  }
}

}  // namespace detail

struct NoConfig {};

// Counter and UpDownCounter: a running sum.
template <MetricValue T>
struct SumCell {
  using Config = NoConfig;
  explicit SumCell(const Config&) noexcept {}

  void add(T v) noexcept {
    value.fetch_add(v, std::memory_order_relaxed);
    detail::mark(recorded);
  }

  std::atomic<T> value{0};
  std::atomic<bool> recorded{false};  // a series exports once something was recorded
};

// Synchronous gauge: the last value.
template <MetricValue T>
struct GaugeCell {
  using Config = NoConfig;
  explicit GaugeCell(const Config&) noexcept {}

  void set(T v) noexcept {
    value.store(v, std::memory_order_relaxed);
    detail::mark(recorded);
  }

  std::atomic<T> value{0};
  std::atomic<bool> recorded{false};
};

// Explicit-bucket histogram. Bucket i counts values in (bounds[i-1], bounds[i]]; the last bucket
// counts values above the last bound. The count is the sum of the buckets, so a snapshot's count
// always equals the sum of its bucket counts.
struct HistogramCell {
  using Config = std::span<const double>;  // the instrument's bounds; outlive the cell
  explicit HistogramCell(Config b)
      : bounds(b), buckets(new std::atomic<std::uint64_t>[b.size() + 1]) {
    for (std::size_t i = 0; i <= b.size(); ++i) buckets[i].store(0, std::memory_order_relaxed);
  }

  // The bucket of `v`: the first bound >= v (a bound is its bucket's inclusive upper edge).
  std::size_t bucket_of(double v) const noexcept {
    return static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) -
                                    bounds.begin());
  }

  void record(double v) noexcept {
    buckets[bucket_of(v)].fetch_add(1, std::memory_order_relaxed);
    sum.fetch_add(v, std::memory_order_relaxed);
    double lo = min.load(std::memory_order_relaxed);
    while (v < lo && !min.compare_exchange_weak(lo, v, std::memory_order_relaxed)) {
    }
    double hi = max.load(std::memory_order_relaxed);
    while (v > hi && !max.compare_exchange_weak(hi, v, std::memory_order_relaxed)) {
    }
  }

  const std::span<const double> bounds;
  const std::unique_ptr<std::atomic<std::uint64_t>[]> buckets;
  std::atomic<double> sum{0};
  std::atomic<double> min{std::numeric_limits<double>::infinity()};
  std::atomic<double> max{-std::numeric_limits<double>::infinity()};
};

// What each synchronous kind accepts and how it records. A rejected value is dropped and
// reported once per instrument (style.md 6).
template <MetricValue T>
struct CounterRule {
  using Cell = SumCell<T>;
  using Value = T;
  static constexpr const char* kAccepts = "non-negative finite values";
  static bool valid(T v) noexcept { return detail::finite(v) && v >= 0; }
  static void apply(Cell& c, T v) noexcept { c.add(v); }
};

template <MetricValue T>
struct UpDownCounterRule {
  using Cell = SumCell<T>;
  using Value = T;
  static constexpr const char* kAccepts = "finite values";
  static bool valid(T v) noexcept { return detail::finite(v); }
  static void apply(Cell& c, T v) noexcept { c.add(v); }
};

template <MetricValue T>
struct GaugeRule {
  using Cell = GaugeCell<T>;
  using Value = T;
  static constexpr const char* kAccepts = "finite values";
  static bool valid(T v) noexcept { return detail::finite(v); }
  static void apply(Cell& c, T v) noexcept { c.set(v); }
};

struct HistogramRule {
  using Cell = HistogramCell;
  using Value = double;
  static constexpr const char* kAccepts = "non-negative finite values";
  static bool valid(double v) noexcept { return std::isfinite(v) && v >= 0; }
  static void apply(Cell& c, double v) noexcept { c.record(v); }
};

}  // namespace gym::telemetry
