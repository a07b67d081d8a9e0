#pragma once
// Test support, header-only: a private temporary directory for one test. Any test binary can
// include it (link the gym_test_headers target for the include path).
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace gym::test {

// A fresh directory under the system temp dir, removed with everything in it at destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gym-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // The full path of `relative` inside the directory (nothing is created).
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

}  // namespace gym::test
