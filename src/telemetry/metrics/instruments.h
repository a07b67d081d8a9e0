#pragma once
// Instrument handles. An instrument is a pointer to its storage (owned by the MeterProvider);
// a bound handle is a pointer to one series' cell. Both are cheap to copy, may be used from any
// thread, and stay valid as long as the provider that created them.
//
// A default-constructed handle, or one from a disabled provider, is empty: recording through it
// is a single branch on a null pointer and nothing else. Recording never throws and never
// blocks on I/O; an invalid value (negative for counters and histograms, NaN or infinite) is
// dropped and reported once per instrument.
//
// Unbound recording (`counter.add(1, {{"k", "v"}})`) sorts and hashes the list on the stack and
// finds the series without a lock; bind the attribute set once (`counter.bind({...})`) where the
// set is known ahead, and recording becomes a few relaxed atomic operations.
#include <cstdint>
#include <span>

#include "telemetry/common/attributes.h"
#include "telemetry/metrics/cells.h"
#include "telemetry/metrics/storage.h"

namespace gym::telemetry {

class MeterProvider;
template <class Rule>
class SyncInstrument;

// The one guard of bound recording.
template <class Rule>
class BoundInstrument {
 public:
  BoundInstrument() = default;
  explicit operator bool() const noexcept { return cell_ != nullptr; }

 protected:
  void record_value(typename Rule::Value v) const noexcept {
    if (!cell_) return;
    if (!Rule::valid(v)) [[unlikely]] {
      owner_->report_dropped(static_cast<double>(v), Rule::kAccepts);
      return;
    }
    Rule::apply(*cell_, v);
  }

 private:
  friend class SyncInstrument<Rule>;
  BoundInstrument(typename Rule::Cell* cell, InstrumentStorage* owner) noexcept
      : cell_(cell), owner_(owner) {}

  typename Rule::Cell* cell_ = nullptr;
  InstrumentStorage* owner_ = nullptr;
};

// The one guard of unbound recording and binding.
template <class Rule>
class SyncInstrument {
 public:
  SyncInstrument() = default;
  explicit operator bool() const noexcept { return storage_ != nullptr; }
  // Null for an empty handle.
  const InstrumentDescriptor* descriptor() const noexcept {
    return storage_ ? &storage_->descriptor() : nullptr;
  }

 protected:
  void record_value(typename Rule::Value v, AttributeList attributes) const noexcept {
    if (!storage_) return;
    storage_->record(v, std::span<const AttributeView>(attributes.begin(), attributes.size()));
  }
  void record_value(typename Rule::Value v, const AttributeSet& attributes) const noexcept {
    if (!storage_) return;
    storage_->record(v, attributes);
  }
  template <class Bound>
  Bound bind_to(AttributeList attributes) const {
    if (!storage_) return Bound();
    return Bound(
        &storage_->cell(std::span<const AttributeView>(attributes.begin(), attributes.size())),
        storage_);
  }
  template <class Bound>
  Bound bind_to(const AttributeSet& attributes) const {
    if (!storage_) return Bound();
    return Bound(&storage_->cell(attributes), storage_);
  }

 private:
  friend class MeterProvider;
  explicit SyncInstrument(SyncStorage<Rule>* storage) noexcept : storage_(storage) {}

  SyncStorage<Rule>* storage_ = nullptr;
};

// ---- Counter: monotonic sum ----

template <MetricValue T>
class BoundCounter : public BoundInstrument<CounterRule<T>> {
 public:
  using BoundInstrument<CounterRule<T>>::BoundInstrument;
  void add(T v) const noexcept { this->record_value(v); }
};

template <MetricValue T>
class Counter : public SyncInstrument<CounterRule<T>> {
 public:
  using SyncInstrument<CounterRule<T>>::SyncInstrument;
  void add(T v, AttributeList attributes = {}) const noexcept { this->record_value(v, attributes); }
  void add(T v, const AttributeSet& attributes) const noexcept {
    this->record_value(v, attributes);
  }
  BoundCounter<T> bind(AttributeList attributes = {}) const {
    return this->template bind_to<BoundCounter<T>>(attributes);
  }
  BoundCounter<T> bind(const AttributeSet& attributes) const {
    return this->template bind_to<BoundCounter<T>>(attributes);
  }
};

// ---- UpDownCounter: non-monotonic sum ----

template <MetricValue T>
class BoundUpDownCounter : public BoundInstrument<UpDownCounterRule<T>> {
 public:
  using BoundInstrument<UpDownCounterRule<T>>::BoundInstrument;
  void add(T v) const noexcept { this->record_value(v); }
};

template <MetricValue T>
class UpDownCounter : public SyncInstrument<UpDownCounterRule<T>> {
 public:
  using SyncInstrument<UpDownCounterRule<T>>::SyncInstrument;
  void add(T v, AttributeList attributes = {}) const noexcept { this->record_value(v, attributes); }
  void add(T v, const AttributeSet& attributes) const noexcept {
    this->record_value(v, attributes);
  }
  BoundUpDownCounter<T> bind(AttributeList attributes = {}) const {
    return this->template bind_to<BoundUpDownCounter<T>>(attributes);
  }
  BoundUpDownCounter<T> bind(const AttributeSet& attributes) const {
    return this->template bind_to<BoundUpDownCounter<T>>(attributes);
  }
};

// ---- Gauge: synchronous last value ----

template <MetricValue T>
class BoundGauge : public BoundInstrument<GaugeRule<T>> {
 public:
  using BoundInstrument<GaugeRule<T>>::BoundInstrument;
  void record(T v) const noexcept { this->record_value(v); }
};

template <MetricValue T>
class Gauge : public SyncInstrument<GaugeRule<T>> {
 public:
  using SyncInstrument<GaugeRule<T>>::SyncInstrument;
  void record(T v, AttributeList attributes = {}) const noexcept {
    this->record_value(v, attributes);
  }
  void record(T v, const AttributeSet& attributes) const noexcept {
    this->record_value(v, attributes);
  }
  BoundGauge<T> bind(AttributeList attributes = {}) const {
    return this->template bind_to<BoundGauge<T>>(attributes);
  }
  BoundGauge<T> bind(const AttributeSet& attributes) const {
    return this->template bind_to<BoundGauge<T>>(attributes);
  }
};

// ---- Histogram: explicit buckets, count, sum, min, max ----

class BoundHistogram : public BoundInstrument<HistogramRule> {
 public:
  using BoundInstrument<HistogramRule>::BoundInstrument;
  void record(double v) const noexcept { this->record_value(v); }
};

class Histogram : public SyncInstrument<HistogramRule> {
 public:
  using SyncInstrument<HistogramRule>::SyncInstrument;
  void record(double v, AttributeList attributes = {}) const noexcept {
    this->record_value(v, attributes);
  }
  void record(double v, const AttributeSet& attributes) const noexcept {
    this->record_value(v, attributes);
  }
  BoundHistogram bind(AttributeList attributes = {}) const {
    return this->template bind_to<BoundHistogram>(attributes);
  }
  BoundHistogram bind(const AttributeSet& attributes) const {
    return this->template bind_to<BoundHistogram>(attributes);
  }
};

}  // namespace gym::telemetry
