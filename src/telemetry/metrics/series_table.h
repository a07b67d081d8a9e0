#pragma once
// The series of one instrument: attribute set -> cell, with lock-free lookup.
//
// Threading: find() and get() may run on any number of threads at once. Lookup reads an
// open-addressing table of atomic pointers without taking a lock and without writing any shared
// memory, so threads recording to known series never contend on the table. Inserting a new
// attribute set takes the table's mutex; a full table is replaced by a larger copy, and old
// copies stay allocated until the table is destroyed, so a concurrent reader never sees freed
// memory. Series are never removed (cumulative temporality): a cell's address is stable for the
// table's lifetime, which is what bound handles hold.
//
// Cardinality: at most `limit` distinct attribute sets; later ones share one overflow series
// whose attribute set is {otel.metric.overflow: true}.
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "telemetry/common/attributes.h"

namespace gym::telemetry {

template <class Cell>
class SeriesTable {
 public:
  struct alignas(64) Series {  // own cache line(s): no false sharing between series
    Series(AttributeSet a, const typename Cell::Config& init)
        : attributes(std::move(a)), cell(init) {}
    const AttributeSet attributes;
    Cell cell;
  };

  SeriesTable(std::size_t limit, typename Cell::Config init)
      : limit_(limit), init_(std::move(init)) {
    publish(std::make_unique<Slots>(16));
  }
  SeriesTable(const SeriesTable&) = delete;
  SeriesTable& operator=(const SeriesTable&) = delete;

  // The series of `key` if present; never blocks, never allocates.
  template <class Key>
  Series* find(const Key& key) const noexcept {
    const std::size_t h = AttributeSetHash{}(key);
    const Slots* t = current_.load(std::memory_order_acquire);
    for (std::size_t i = h & t->mask;; i = (i + 1) & t->mask) {
      Series* s = t->slots[i].load(std::memory_order_acquire);
      if (!s) return nullptr;
      if (AttributeSetEqual{}(s->attributes, key)) return s;
    }
  }

  // The series of `key`, created on first use (or the overflow series past the limit). Allocates
  // and locks only when creating.
  template <class Key>
  Series& get(const Key& key) {
    if (Series* s = find(key)) return *s;
    return insert(key);
  }

  // Every series in creation order (the overflow series last). Takes the mutex briefly.
  std::vector<const Series*> series() const {
    std::lock_guard lock(mutex_);
    std::vector<const Series*> out;
    out.reserve(all_.size());
    for (const auto& s : all_) out.push_back(s.get());
    return out;
  }

  // True once a set was folded into the overflow series.
  bool overflowed() const noexcept { return overflowed_.load(std::memory_order_relaxed); }

 private:
  struct Slots {
    explicit Slots(std::size_t n) : mask(n - 1), slots(new std::atomic<Series*>[n]) {
      for (std::size_t i = 0; i < n; ++i) slots[i].store(nullptr, std::memory_order_relaxed);
    }
    std::size_t mask;
    std::unique_ptr<std::atomic<Series*>[]> slots;
  };

  template <class Key>
  Series& insert(const Key& key) {
    std::lock_guard lock(mutex_);
    if (Series* s = find(key)) return *s;  // inserted meanwhile
    if (distinct_ >= limit_) {
      if (!overflow_) {
        AttributeSet overflow{{"otel.metric.overflow", true}};
        if (Series* s = find(overflow)) {
          overflow_ = s;  // recorded explicitly before the limit was reached
        } else {
          overflow_ = &add(std::move(overflow));
        }
      }
      overflowed_.store(true, std::memory_order_relaxed);
      return *overflow_;
    }
    ++distinct_;
    return add(AttributeSet(key));
  }

  Series& add(AttributeSet attributes) {  // mutex held
    all_.push_back(std::make_unique<Series>(std::move(attributes), init_));
    Series* s = all_.back().get();
    Slots* t = current_.load(std::memory_order_relaxed);
    if (2 * all_.size() > t->mask + 1) {  // keep the load factor at most 1/2
      auto bigger = std::make_unique<Slots>(2 * (t->mask + 1));
      for (const auto& old : all_) place(*bigger, old.get());
      publish(std::move(bigger));
    } else {
      place(*t, s);
    }
    return *s;
  }

  static void place(Slots& t, Series* s) {
    for (std::size_t i = s->attributes.hash() & t.mask;; i = (i + 1) & t.mask) {
      if (!t.slots[i].load(std::memory_order_relaxed)) {
        t.slots[i].store(s, std::memory_order_release);
        return;
      }
    }
  }

  void publish(std::unique_ptr<Slots> t) {
    current_.store(t.get(), std::memory_order_release);
    tables_.push_back(std::move(t));
  }

  const std::size_t limit_;
  const typename Cell::Config init_;
  std::atomic<Slots*> current_{nullptr};
  std::atomic<bool> overflowed_{false};
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Slots>> tables_;  // current and retired copies
  std::vector<std::unique_ptr<Series>> all_;    // creation order
  std::size_t distinct_ = 0;                    // series counted against the limit
  Series* overflow_ = nullptr;
};

}  // namespace gym::telemetry
