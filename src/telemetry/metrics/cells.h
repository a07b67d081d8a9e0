#pragma once
// The per-series state of each synchronous instrument kind, and the rule each kind applies to a
// value before recording it. Every cell is a few atomics updated with relaxed operations: any
// number of threads may record into one cell while another thread reads it.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
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

// Counters and histograms keep kStripes copies of their state, each on its own cache lines.
// A thread always records into the same stripe (threads are numbered in the order they first
// record), so two threads recording into one series do not fight over one cache line;
// collection adds the stripes up.
inline constexpr std::uint32_t kStripes = 4;
inline constexpr std::size_t kCacheLine = 64;

std::uint32_t next_stripe() noexcept;                   // out of line: numbers the calling thread
inline thread_local std::uint32_t t_stripe = kStripes;  // kStripes = not numbered yet

inline std::uint32_t thread_stripe() noexcept {
  std::uint32_t s = t_stripe;
  if (s == kStripes) [[unlikely]] {
    s = t_stripe = next_stripe();
  }
  return s;
}

}  // namespace detail

struct NoConfig {};

// Counter and UpDownCounter: a running sum, striped.
template <MetricValue T>
struct SumCell {
  using Config = NoConfig;
  explicit SumCell(const Config&) noexcept {}

  void add(T v) noexcept {
    stripes[detail::thread_stripe()].value.fetch_add(v, std::memory_order_relaxed);
    detail::mark(recorded);
  }

  T total() const noexcept {
    T sum = 0;
    for (const auto& s : stripes) sum += s.value.load(std::memory_order_relaxed);
    return sum;
  }

  struct alignas(detail::kCacheLine) Stripe {
    std::atomic<T> value{0};
  };
  std::atomic<bool> recorded{false};  // a series exports once something was recorded
  std::array<Stripe, detail::kStripes> stripes;
};

// Synchronous gauge: the last value (one cell: "last" has no meaning across stripes).
template <MetricValue T>
struct GaugeCell {
  using Config = NoConfig;
  explicit GaugeCell(const Config&) noexcept {}

  void set(T v) noexcept {
    value.store(v, std::memory_order_relaxed);
    detail::mark(recorded);
  }

  T total() const noexcept { return value.load(std::memory_order_relaxed); }

  std::atomic<T> value{0};
  std::atomic<bool> recorded{false};
};

// Explicit-bucket histogram, striped. Bucket i counts values in (bounds[i-1], bounds[i]]; the
// last bucket counts values above the last bound. The count is the sum of the buckets, so a
// snapshot's count always equals the sum of its bucket counts.
struct HistogramCell {
  using Config = std::span<const double>;  // the instrument's bounds; outlive the cell

  explicit HistogramCell(Config b)
      : bounds(b),
        stride((b.size() + 1 + kPerLine - 1) / kPerLine * kPerLine),
        buckets(new (std::align_val_t(detail::kCacheLine))
                    std::atomic<std::uint64_t>[stride * detail::kStripes]) {
    for (std::size_t i = 0; i < stride * detail::kStripes; ++i) {
      buckets[i].store(0, std::memory_order_relaxed);
    }
  }

  // The bucket of `v`: the first bound >= v (a bound is its bucket's inclusive upper edge).
  std::size_t bucket_of(double v) const noexcept {
    return static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) -
                                    bounds.begin());
  }

  void record(double v) noexcept {
    const std::uint32_t s = detail::thread_stripe();
    buckets[s * stride + bucket_of(v)].fetch_add(1, std::memory_order_relaxed);
    Stripe& st = stripes[s];
    st.sum.fetch_add(v, std::memory_order_relaxed);
    double lo = st.min.load(std::memory_order_relaxed);
    while (v < lo && !st.min.compare_exchange_weak(lo, v, std::memory_order_relaxed)) {
    }
    double hi = st.max.load(std::memory_order_relaxed);
    while (v > hi && !st.max.compare_exchange_weak(hi, v, std::memory_order_relaxed)) {
    }
  }

  // The count of bucket `i` over all stripes.
  std::uint64_t bucket_count(std::size_t i) const noexcept {
    std::uint64_t n = 0;
    for (std::size_t s = 0; s < detail::kStripes; ++s) {
      n += buckets[s * stride + i].load(std::memory_order_relaxed);
    }
    return n;
  }
  double sum() const noexcept {
    double total = 0;
    for (const auto& s : stripes) total += s.sum.load(std::memory_order_relaxed);
    return total;
  }
  double min() const noexcept {
    double m = std::numeric_limits<double>::infinity();
    for (const auto& s : stripes) m = std::min(m, s.min.load(std::memory_order_relaxed));
    return m;
  }
  double max() const noexcept {
    double m = -std::numeric_limits<double>::infinity();
    for (const auto& s : stripes) m = std::max(m, s.max.load(std::memory_order_relaxed));
    return m;
  }

  struct AlignedDelete {
    void operator()(std::atomic<std::uint64_t>* p) const noexcept {
      ::operator delete[](p, std::align_val_t(detail::kCacheLine));
    }
  };
  struct alignas(detail::kCacheLine) Stripe {
    std::atomic<double> sum{0};
    std::atomic<double> min{std::numeric_limits<double>::infinity()};
    std::atomic<double> max{-std::numeric_limits<double>::infinity()};
  };
  static constexpr std::size_t kPerLine = detail::kCacheLine / sizeof(std::atomic<std::uint64_t>);

  const std::span<const double> bounds;
  const std::size_t stride;  // buckets per stripe, padded to whole cache lines
  const std::unique_ptr<std::atomic<std::uint64_t>[], AlignedDelete> buckets;
  std::array<Stripe, detail::kStripes> stripes;
};

// What each synchronous kind accepts and how it records. A rejected value is dropped and
// reported once per instrument: recording never throws.
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
