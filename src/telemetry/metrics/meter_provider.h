#pragma once
// The per-process registry of instruments and their storage, and collection into a snapshot.
//
// Threading: creating instruments and collect() may be called from any thread; recording never
// touches the provider (instruments point straight at their storage). collect() calls are
// serialised with each other (observable callbacks never run concurrently) but never with
// recording. Instruments and bound handles must not outlive their provider.
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "telemetry/metrics/instruments.h"
#include "telemetry/metrics/metric_data.h"
#include "telemetry/metrics/storage.h"

namespace gym::telemetry {

inline constexpr std::size_t kDefaultCardinalityLimit = 2000;

// Instrumentation scope of every gym-cpp instrument: name `gym-cpp`, version = gym-cpp version.
InstrumentationScope gym_scope();

// Nanoseconds since the Unix epoch (system clock).
std::uint64_t unix_nano_now() noexcept;

// The one check of a new instrument: the name (OTel syntax: a letter, then up to 254 of
// letters, digits, `_`, `.`, `-`, `/`), the unit (ASCII, at most 63 characters), the
// description (at most 1023 bytes), histogram bounds (finite, strictly increasing) and
// duplicates. Names compare case-insensitively. Returns the index in `existing` of an identical
// synchronous instrument (the caller shares its storage) or nullopt for a new one. Throws
// std::invalid_argument naming the instrument and the problem: a syntax error, a second
// registration of the same name with a different kind, value type, unit, description or
// bounds, or any second registration of an observable instrument.
std::optional<std::size_t> check_instrument(const InstrumentDescriptor& descriptor,
                                            std::span<const InstrumentDescriptor* const> existing);

struct MeterProviderOptions {
  Resource resource;
  InstrumentationScope scope = gym_scope();
  std::size_t cardinality_limit = kDefaultCardinalityLimit;
  // false: every created instrument is an empty handle and collect() returns no metrics (the
  // definitions are still checked, so a bad name fails in every configuration).
  bool enabled = true;
};

class MeterProvider {
 public:
  explicit MeterProvider(MeterProviderOptions options = {});
  ~MeterProvider();
  MeterProvider(const MeterProvider&) = delete;
  MeterProvider& operator=(const MeterProvider&) = delete;

  bool enabled() const noexcept { return options_.enabled; }
  const Resource& resource() const noexcept { return options_.resource; }

  template <MetricValue T>
  Counter<T> create_counter(std::string name, std::string unit = "", std::string description = "") {
    return Counter<T>(sync_storage<CounterRule<T>>(describe<T>(
        std::move(name), std::move(unit), std::move(description), InstrumentKind::counter)));
  }

  template <MetricValue T>
  UpDownCounter<T> create_up_down_counter(std::string name, std::string unit = "",
                                          std::string description = "") {
    return UpDownCounter<T>(sync_storage<UpDownCounterRule<T>>(
        describe<T>(std::move(name), std::move(unit), std::move(description),
                    InstrumentKind::up_down_counter)));
  }

  template <MetricValue T>
  Gauge<T> create_gauge(std::string name, std::string unit = "", std::string description = "") {
    return Gauge<T>(sync_storage<GaugeRule<T>>(describe<T>(
        std::move(name), std::move(unit), std::move(description), InstrumentKind::gauge)));
  }

  // `bounds`: strictly increasing; each is the inclusive upper edge of its bucket, and one more
  // bucket counts values above the last bound.
  Histogram create_histogram(std::string name, std::string unit, std::string description,
                             std::vector<double> bounds);

  // Observable instruments report what their callback observes, once per collection (the
  // values of an observable counter are cumulative totals). The callback runs on the
  // collecting thread, never concurrently with itself, and must not create instruments.
  template <MetricValue T>
  void create_observable_counter(std::string name, std::string unit, std::string description,
                                 ObservableCallback<T> callback) {
    observable<T>(describe<T>(std::move(name), std::move(unit), std::move(description),
                              InstrumentKind::observable_counter),
                  std::move(callback));
  }

  template <MetricValue T>
  void create_observable_gauge(std::string name, std::string unit, std::string description,
                               ObservableCallback<T> callback) {
    observable<T>(describe<T>(std::move(name), std::move(unit), std::move(description),
                              InstrumentKind::observable_gauge),
                  std::move(callback));
  }

  // A snapshot of every instrument that has points: cumulative values, start = instrument
  // creation, time = now. Builds plain data; the storage is only read.
  MetricsSnapshot collect() const;

 private:
  template <MetricValue T>
  static InstrumentDescriptor describe(std::string name, std::string unit, std::string description,
                                       InstrumentKind kind) {
    return InstrumentDescriptor{std::move(name),
                                std::move(unit),
                                std::move(description),
                                kind,
                                std::is_same_v<T, double> ? ValueType::float64 : ValueType::int64,
                                {}};
  }

  // Checks `d`, then returns the storage of an identical instrument or creates one (null when
  // disabled).
  template <class Rule>
  SyncStorage<Rule>* sync_storage(InstrumentDescriptor d) {
    std::lock_guard lock(mutex_);
    auto same = check(d);
    if (!options_.enabled) return nullptr;
    if (same) return static_cast<SyncStorage<Rule>*>(instruments_[*same].get());
    auto storage = std::make_unique<SyncStorage<Rule>>(std::move(d), unix_nano_now(),
                                                       options_.cardinality_limit);
    auto* raw = storage.get();
    instruments_.push_back(std::move(storage));
    return raw;
  }

  template <MetricValue T>
  void observable(InstrumentDescriptor d, ObservableCallback<T> callback) {
    std::lock_guard lock(mutex_);
    check(d);
    if (!options_.enabled) return;
    instruments_.push_back(std::make_unique<ObservableStorage<T>>(
        std::move(d), unix_nano_now(), options_.cardinality_limit, std::move(callback)));
  }

  // check_instrument against every instrument created so far; records `d` as seen. Mutex held.
  std::optional<std::size_t> check(const InstrumentDescriptor& d);

  const MeterProviderOptions options_;
  mutable std::mutex mutex_;          // guards instruments_ and seen_
  mutable std::mutex collect_mutex_;  // serialises collect()
  std::vector<std::unique_ptr<InstrumentStorage>> instruments_;
  // Descriptors of every instrument created (also when disabled), for check_instrument. When
  // enabled, seen_[i] describes instruments_[i].
  std::vector<std::unique_ptr<InstrumentDescriptor>> seen_;
};

}  // namespace gym::telemetry
