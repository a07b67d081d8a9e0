// Shared fixtures for the rollouts tests: a private temporary directory, file text, JSON rows,
// a scoped environment variable and error checks.
#pragma once

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/json_text.h"
#include "files.h"
#include "temp_dir.h"

namespace gym::rollouts::testing {

namespace json = boost::json;

using gym::test::read_text;
using gym::test::TempDir;

// A JSON object from its text (test data is always valid).
inline json::object obj(std::string_view text) { return core::parse_json(text).as_object(); }

// Rows of JSONL text, one object per non-empty line.
inline std::vector<json::object> rows_of(const std::string& text) {
  std::vector<json::object> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(obj(line));
  return rows;
}

// Sets (or, with nullopt, unsets) an environment variable for the scope; restores it after.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value) {
      ::setenv(name_.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

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

template <typename Fn>
std::string config_error_of(Fn&& fn) {
  return error_of<core::ConfigError>(std::forward<Fn>(fn));
}

}  // namespace gym::rollouts::testing

#define EXPECT_CONTAINS(haystack, needle)                          \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) \
      << "expected to find: " << (needle) << "\nin: " << (haystack)

#define EXPECT_NOT_CONTAINS(haystack, needle)                      \
  EXPECT_EQ(std::string(haystack).find(needle), std::string::npos) \
      << "expected not to find: " << (needle) << "\nin: " << (haystack)
