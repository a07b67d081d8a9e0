// The console exporter with real files: one OTLP/JSON line per export, appended, never
// interleaved between processes sharing the file.
#include "exporters/console/console_exporter.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "telemetry/metrics/meter_provider.h"
#include "telemetry/metrics/periodic_reader.h"

namespace gym::exporters {
namespace {

namespace json = boost::json;
using telemetry::Deadline;
using telemetry::MeterProvider;
using telemetry::PeriodicReader;

const json::object& metric_named(const json::value& request, std::string_view name) {
  for (const auto& m :
       request.at("resourceMetrics").at(0).at("scopeMetrics").at(0).at("metrics").as_array()) {
    if (m.at("name").as_string() == name) return m.as_object();
  }
  throw std::runtime_error("no metric " + std::string(name));
}

class TempFile {
 public:
  TempFile()
      : path_(std::filesystem::temp_directory_path() /
              ("gym_telemetry_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++) +
               ".jsonl")) {
    std::filesystem::remove(path_);
  }
  ~TempFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }
  std::vector<std::string> lines() const {
    std::ifstream in(path_);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

std::int64_t counter_in_line(const std::string& line, std::string_view name) {
  json::value v = json::parse(line);
  const auto& m = metric_named(v, name);
  return std::stoll(std::string(m.at("sum").at("dataPoints").at(0).at("asInt").as_string()));
}

TEST(ConsoleExporter, AppendsOneLinePerExportToAFile) {
  TempFile file;
  { std::ofstream(file.path()) << "existing line\n"; }
  MeterProvider provider;
  auto c = provider.create_counter<std::int64_t>("t.requests");
  PeriodicReader reader(provider, std::make_unique<ConsoleExporter>(file.path()),
                        {std::chrono::hours(1), std::chrono::hours(1)});
  c.add(3);
  EXPECT_TRUE(reader.force_flush());
  c.add(4);
  EXPECT_TRUE(reader.shutdown());
  auto lines = file.lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "existing line");
  EXPECT_EQ(counter_in_line(lines[1], "t.requests"), 3);
  EXPECT_EQ(counter_in_line(lines[2], "t.requests"), 7);  // cumulative
  EXPECT_EQ(reader.stats().exports, 2u);
  EXPECT_EQ(reader.stats().failures, 0u);
}

TEST(ConsoleExporter, ProcessesSharingAFileNeverInterleave) {
  TempFile file;
  constexpr int kWriters = 4;
  constexpr int kExports = 50;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      MeterProvider provider;
      auto c = provider.create_counter<std::int64_t>("t.writer");
      // Long lines: many attribute sets.
      for (int i = 0; i < 100; ++i) c.add(w, {{"series", i}});
      ConsoleExporter exporter(file.path());
      for (int e = 0; e < kExports; ++e) {
        exporter.export_metrics(provider.collect(), Deadline::max());
      }
    });
  }
  for (auto& t : writers) t.join();
  auto lines = file.lines();
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kWriters * kExports));
  for (const auto& line : lines) EXPECT_NO_THROW(json::parse(line));
}

TEST(ConsoleExporter, UnopenableFileIsAnError) {
  try {
    ConsoleExporter exporter(std::string("/nonexistent-dir/x.jsonl"));
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.jsonl"), std::string::npos);
  }
}

}  // namespace
}  // namespace gym::exporters
