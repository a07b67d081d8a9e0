#pragma once
// Test support, header-only: reading what a test's subject wrote (whole files, lines, JSONL).
// Any test binary can include it (link the gym_test_headers target).
#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gym::test {

// The whole file; "" when it cannot be read.
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The non-empty lines of a file, without their '\n'; none when it cannot be read.
inline std::vector<std::string> read_lines(const std::filesystem::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

// The rows of a JSONL file (each non-empty line an object, read with boost::json::parse, which
// throws on a malformed line); none when the file does not exist.
inline std::vector<boost::json::object> read_jsonl(const std::filesystem::path& path) {
  std::vector<boost::json::object> rows;
  for (const auto& line : read_lines(path)) rows.push_back(boost::json::parse(line).as_object());
  return rows;
}

}  // namespace gym::test
