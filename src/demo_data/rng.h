#pragma once
// The demo data's only source of variation: splitmix64, written out so that the same seed gives
// the same bytes with every standard library (std:: distributions are implementation-defined).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gym::demo_data {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi] (lo <= hi); the modulo bias is far below anything the demo shows.
  int between(int lo, int hi) {
    return lo + static_cast<int>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  int below(int n) { return between(0, n - 1); }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  bool chance(double p) { return unit() < p; }

  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(below(static_cast<int>(v.size())))];
  }
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i)
      std::swap(v[i - 1], v[static_cast<std::size_t>(below(static_cast<int>(i)))]);
  }
  // `prefix` then `n` characters of `alphabet`: ids shaped like OpenAI's (resp_..., call_...).
  std::string id(std::string_view prefix, int n, std::string_view alphabet = "0123456789abcdef") {
    std::string out(prefix);
    for (int i = 0; i < n; ++i) out += alphabet[next() % alphabet.size()];
    return out;
  }

 private:
  std::uint64_t state_;
};

}  // namespace gym::demo_data
