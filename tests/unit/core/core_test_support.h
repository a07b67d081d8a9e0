// Shared fixtures for the core tests: config sources and error checks (the temporary
// directory is tests/support/temp_dir.h).
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include <boost/json/array.hpp>

#include <initializer_list>

#include "core/config.h"

namespace gym::core::testing {

// Sources that see only `roots` and an empty environment.
inline ConfigSources sources_in(std::vector<std::string> roots) {
  ConfigSources s;
  s.search_roots = std::move(roots);
  s.getenv = [](const std::string&) { return std::optional<std::string>(); };
  return s;
}

// The message of the ConfigError `fn` throws; a test failure when it throws none.
template <typename Fn>
std::string config_error_of(Fn&& fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError";
  return "";
}

// A JSON list of strings, to compare with a config's lists.
inline boost::json::array strings(std::initializer_list<const char*> items) {
  boost::json::array out;
  for (const char* item : items) out.emplace_back(item);
  return out;
}

}  // namespace gym::core::testing

#define EXPECT_CONTAINS(haystack, needle)                          \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) \
      << "expected to find: " << (needle) << "\nin: " << (haystack)
