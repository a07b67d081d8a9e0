#pragma once
// Test support, header-only: looking for text in what a test's subject printed or wrote.
// Any test binary can include it (link the gym_test_headers target).
#include <cstddef>
#include <string_view>

namespace gym::test {

// Whether `part` occurs in `text`.
inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// How many times `needle` occurs in `text`, overlapping occurrences included.
inline std::size_t count_of(std::string_view text, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

}  // namespace gym::test
