// Shared fixtures for the core tests: a private temporary directory and error checks.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/config.h"

namespace gym::core::testing {

// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gym-core-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& relative) const { return path_ + "/" + relative; }

  // Writes `text` to `relative` (creating directories) and returns the full path.
  std::string write(const std::string& relative, const std::string& text) const {
    std::filesystem::path p = file(relative);
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }

 private:
  std::string path_;
};

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

}  // namespace gym::core::testing

#define EXPECT_CONTAINS(haystack, needle)                                        \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)               \
      << "expected to find: " << (needle) << "\nin: " << (haystack)
