#include "telemetry/common/attributes.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace gym::telemetry {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) noexcept {
  // splitmix64 finaliser of the combination: order-sensitive, well spread.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  return h;
}

// Attribute keys and values are short: an inline word-at-a-time hash beats a library call.
std::uint64_t hash_bytes(std::string_view s) noexcept {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ (s.size() * 0xff51afd7ed558ccdULL);
  const char* p = s.data();
  std::size_t n = s.size();
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  }
  if (n > 0) {
    std::uint64_t w = 0;
    for (std::size_t i = 0; i < n; ++i) {
      w |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
    }
    h = (h ^ w) * 0x94d049bb133111ebULL;
    h ^= h >> 29;
  }
  return h;
}

std::uint64_t double_bits(double d) noexcept {
  if (d == 0.0) d = 0.0;  // -0.0 and 0.0 are the same attribute value
  return std::bit_cast<std::uint64_t>(d);
}

std::uint64_t hash_value(const AttributeValueView& v) noexcept {
  std::uint64_t tagged = v.index() + 1;
  switch (v.index()) {
    case 0:
      return mix(tagged, hash_bytes(std::get<0>(v)));
    case 1:
      return mix(tagged, std::get<1>(v) ? 1 : 0);
    case 2:
      return mix(tagged, static_cast<std::uint64_t>(std::get<2>(v)));
    default:
      return mix(tagged, double_bits(std::get<3>(v)));
  }
}

std::uint64_t hash_pair(std::uint64_t h, std::string_view key, const AttributeValueView& v) {
  h = mix(h, hash_bytes(key));
  return mix(h, hash_value(v));
}

constexpr std::uint64_t kSeed = 0x243f6a8885a308d3ULL;

// The first 8 bytes as a big-endian number, zero-padded: comparing two of these orders keys as
// memcmp would, and keys that share a prefix of 8 bytes fall back to the full comparison.
std::uint64_t prefix8(std::string_view s) noexcept {
  std::uint64_t w = 0;
  if (s.size() >= 8) {
    std::memcpy(&w, s.data(), 8);
    return __builtin_bswap64(w);
  }
  for (std::size_t i = 0; i < s.size(); ++i) {
    w |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[i])) << (56 - 8 * i);
  }
  return w;
}

bool key_less(std::string_view a, std::string_view b) noexcept {
  const std::uint64_t pa = prefix8(a);
  const std::uint64_t pb = prefix8(b);
  if (pa != pb) return pa < pb;
  return a < b;
}

// Sorts pointers by key (stable insertion sort: lists are short) and keeps the last of equal
// keys. Returns the new size.
std::size_t sort_unique(const AttributeView** items, std::size_t n) noexcept {
  for (std::size_t i = 1; i < n; ++i) {
    const AttributeView* x = items[i];
    std::size_t j = i;
    while (j > 0 && key_less(x->key, items[j - 1]->key)) {
      items[j] = items[j - 1];
      --j;
    }
    items[j] = x;
  }
  std::size_t out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i + 1 < n && items[i + 1]->key == items[i]->key) continue;  // a later one wins
    items[out++] = items[i];
  }
  return out;
}

}  // namespace

AttributeView::AttributeView(const Attribute& a) : key(a.key), value(view_of(a.value)) {}

AttributeValueView view_of(const AttributeValue& v) noexcept {
  switch (v.index()) {
    case 0:
      return std::string_view(std::get<0>(v));
    case 1:
      return std::get<1>(v);
    case 2:
      return std::get<2>(v);
    default:
      return std::get<3>(v);
  }
}

bool same_value(const AttributeValueView& a, const AttributeValueView& b) noexcept {
  if (a.index() != b.index()) return false;
  switch (a.index()) {
    case 0:
      return std::get<0>(a) == std::get<0>(b);
    case 1:
      return std::get<1>(a) == std::get<1>(b);
    case 2:
      return std::get<2>(a) == std::get<2>(b);
    default:
      return double_bits(std::get<3>(a)) == double_bits(std::get<3>(b));
  }
}

SortedAttributes::SortedAttributes(std::span<const AttributeView> list) {
  const AttributeView** items = inline_.data();
  if (list.size() > kInline) {
    spill_.resize(list.size());
    items = spill_.data();
  }
  for (std::size_t i = 0; i < list.size(); ++i) items[i] = &list[i];
  size_ = sort_unique(items, list.size());
  std::uint64_t h = kSeed;
  for (std::size_t i = 0; i < size_; ++i) h = hash_pair(h, items[i]->key, items[i]->value);
  hash_ = static_cast<std::size_t>(h);
}

AttributeSet::AttributeSet() : hash_(static_cast<std::size_t>(kSeed)) {}

AttributeSet::AttributeSet(AttributeList list)
    : AttributeSet(std::span<const AttributeView>(list.begin(), list.size())) {}

AttributeSet::AttributeSet(std::span<const AttributeView> list)
    : AttributeSet(SortedAttributes(list)) {}

AttributeSet::AttributeSet(const SortedAttributes& sorted) : hash_(sorted.hash()) {
  items_.reserve(sorted.size());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const AttributeView& a = sorted[i];
    Attribute& out = items_.emplace_back();
    out.key = std::string(a.key);
    switch (a.value.index()) {
      case 0:
        out.value = std::string(std::get<0>(a.value));
        break;
      case 1:
        out.value = std::get<1>(a.value);
        break;
      case 2:
        out.value = std::get<2>(a.value);
        break;
      default:
        out.value = std::get<3>(a.value);
        break;
    }
  }
}

const AttributeValue* AttributeSet::find(std::string_view key) const noexcept {
  auto it = std::lower_bound(items_.begin(), items_.end(), key,
                             [](const Attribute& a, std::string_view k) { return a.key < k; });
  return it != items_.end() && it->key == key ? &it->value : nullptr;
}

bool operator==(const AttributeSet& a, const AttributeSet& b) noexcept {
  if (a.hash_ != b.hash_ || a.items_.size() != b.items_.size()) return false;
  for (std::size_t i = 0; i < a.items_.size(); ++i) {
    if (a.items_[i].key != b.items_[i].key) return false;
    if (!same_value(view_of(a.items_[i].value), view_of(b.items_[i].value))) return false;
  }
  return true;
}

bool operator==(const AttributeSet& a, const SortedAttributes& b) noexcept {
  if (a.hash_ != b.hash() || a.items_.size() != b.size()) return false;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (a.items_[i].key != b[i].key) return false;
    if (!same_value(view_of(a.items_[i].value), b[i].value)) return false;
  }
  return true;
}

}  // namespace gym::telemetry
