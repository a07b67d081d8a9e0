#pragma once
// Test support, header-only: checks on errors and on text that several test binaries share.
// Any test binary can include it (link gym_test_headers; the binary links gym_core for
// core::ConfigError).
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "core/config_error.h"

namespace gym::test {

// The message of the exception of type E that `fn` throws; a test failure when it throws none.
template <typename E, typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

// The message of the core::ConfigError that `fn` throws.
template <typename Fn>
std::string config_error_of(Fn&& fn) {
  return error_of<core::ConfigError>(std::forward<Fn>(fn));
}

}  // namespace gym::test

#define EXPECT_CONTAINS(haystack, needle)                          \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) \
      << "expected to find: " << (needle) << "\nin: " << (haystack)

#define EXPECT_NOT_CONTAINS(haystack, needle)                      \
  EXPECT_EQ(std::string(haystack).find(needle), std::string::npos) \
      << "expected not to find: " << (needle) << "\nin: " << (haystack)
