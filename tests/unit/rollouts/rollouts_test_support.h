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

#include "core/json_text.h"
#include "expect.h"
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

using gym::test::config_error_of;
using gym::test::error_of;

}  // namespace gym::rollouts::testing
