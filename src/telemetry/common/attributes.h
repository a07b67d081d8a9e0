#pragma once
// Attribute sets of metric points: key/value pairs with string, bool, int64 or double values.
// An AttributeSet owns its pairs, sorted by key, and carries its hash. Callers record with a
// list of AttributeView (views of their own strings); SortedAttributes normalises such a list on
// the stack, so looking up an attribute set that was seen before allocates nothing.
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace gym::telemetry {

using AttributeValue = std::variant<std::string, bool, std::int64_t, double>;
using AttributeValueView = std::variant<std::string_view, bool, std::int64_t, double>;

struct Attribute {
  std::string key;
  AttributeValue value;
};

// One pair of a caller's attribute list. Refers to the caller's strings: keep it on the stack.
// Integers of any width become int64 (unsigned values above INT64_MAX wrap); floats become double.
struct AttributeView {
  std::string_view key;
  AttributeValueView value;

  AttributeView(std::string_view k, std::string_view v) : key(k), value(v) {}
  // Without this overload a string literal would convert to bool.
  AttributeView(std::string_view k, const char* v) : key(k), value(std::string_view(v)) {}
  AttributeView(std::string_view k, const std::string& v) : key(k), value(std::string_view(v)) {}
  AttributeView(std::string_view k, bool v) : key(k), value(v) {}
  template <std::integral I>
  requires(!std::same_as<I, bool>) AttributeView(std::string_view k, I v)
      : key(k), value(static_cast<std::int64_t>(v)) {}
  template <std::floating_point F>
  AttributeView(std::string_view k, F v) : key(k), value(static_cast<double>(v)) {}
  AttributeView(std::string_view k, AttributeValueView v) : key(k), value(v) {}
  explicit AttributeView(const Attribute& a);
};

using AttributeList = std::initializer_list<AttributeView>;

AttributeValueView view_of(const AttributeValue& v) noexcept;
// Same alternative and same value; doubles compare by bit pattern with -0.0 == 0.0 (so a NaN
// value equals itself and hashing stays consistent with equality).
bool same_value(const AttributeValueView& a, const AttributeValueView& b) noexcept;

class AttributeSet;

// A caller's list sorted by key with duplicate keys removed (the last one wins), as pointers
// into the list; up to kInline pairs without allocating. Lives no longer than the list.
class SortedAttributes {
 public:
  static constexpr std::size_t kInline = 16;

  explicit SortedAttributes(std::span<const AttributeView> list);
  SortedAttributes(const SortedAttributes&) = delete;
  SortedAttributes& operator=(const SortedAttributes&) = delete;

  std::size_t size() const noexcept { return size_; }
  const AttributeView& operator[](std::size_t i) const noexcept { return *data()[i]; }
  std::size_t hash() const noexcept { return hash_; }

 private:
  const AttributeView* const* data() const noexcept {
    return spill_.empty() ? inline_.data() : spill_.data();
  }

  std::array<const AttributeView*, kInline> inline_;  // first size_ entries used
  std::vector<const AttributeView*> spill_;           // only for lists longer than kInline
  std::size_t size_ = 0;
  std::size_t hash_ = 0;
};

// An owned attribute set: pairs sorted by key, unique keys, hash computed once.
class AttributeSet {
 public:
  AttributeSet();  // the empty set
  AttributeSet(AttributeList list);
  explicit AttributeSet(std::span<const AttributeView> list);
  explicit AttributeSet(const SortedAttributes& sorted);

  std::size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }
  std::vector<Attribute>::const_iterator begin() const noexcept { return items_.begin(); }
  std::vector<Attribute>::const_iterator end() const noexcept { return items_.end(); }
  const Attribute& operator[](std::size_t i) const noexcept { return items_[i]; }
  std::size_t hash() const noexcept { return hash_; }
  // The value of `key`, or null.
  const AttributeValue* find(std::string_view key) const noexcept;

  friend bool operator==(const AttributeSet& a, const AttributeSet& b) noexcept;
  friend bool operator==(const AttributeSet& a, const SortedAttributes& b) noexcept;

 private:
  std::vector<Attribute> items_;
  std::size_t hash_;
};

// Transparent hash and equality: an AttributeSet container can be searched with a
// SortedAttributes (C++20 heterogeneous lookup), without building an AttributeSet.
struct AttributeSetHash {
  using is_transparent = void;
  std::size_t operator()(const AttributeSet& s) const noexcept { return s.hash(); }
  std::size_t operator()(const SortedAttributes& s) const noexcept { return s.hash(); }
};

struct AttributeSetEqual {
  using is_transparent = void;
  bool operator()(const AttributeSet& a, const AttributeSet& b) const noexcept { return a == b; }
  bool operator()(const AttributeSet& a, const SortedAttributes& b) const noexcept {
    return a == b;
  }
  bool operator()(const SortedAttributes& a, const AttributeSet& b) const noexcept {
    return b == a;
  }
};

}  // namespace gym::telemetry
