// The per-process pipeline built from settings: disabled, console to a file, OTLP settings.
#include "exporters/metrics_pipeline.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include "telemetry/process_telemetry.h"

namespace gym::exporters {
namespace {

using namespace telemetry;

GetEnv env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& n) -> std::optional<std::string> {
    auto it = vars.find(n);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(MetricsPipeline, InactiveSettingsGiveEmptyHandlesAndNoThread) {
  auto env = env_of({});
  auto settings = resolve_settings(boost::json::object{}, env);
  MetricsPipeline pipeline(settings, {"mcqa", "resources_servers"}, "run", env);
  EXPECT_FALSE(pipeline.active());
  EXPECT_FALSE(pipeline.provider().enabled());
  auto c = pipeline.provider().create_counter<std::int64_t>("t.c");
  EXPECT_FALSE(c);
  EXPECT_TRUE(pipeline.shutdown());

  auto disabled = env_of({{"NEMO_GYM_OTEL_ENABLED", "1"}, {"OTEL_SDK_DISABLED", "true"}});
  MetricsPipeline off(resolve_settings(boost::json::object{}, disabled),
                      {"mcqa", "resources_servers"}, "run", disabled);
  EXPECT_FALSE(off.active());
}

TEST(MetricsPipeline, ConsoleExporterWritesTheResourceAndValuesAtShutdown) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("gym_pipeline_" + std::to_string(::getpid()) + ".jsonl"))
                               .string();
  std::filesystem::remove(path);
  auto env = env_of({{"NEMO_GYM_OTEL_ENABLED", "yes"},
                     {"NEMO_GYM_OTEL_EXPORTER", "console"},
                     {"NEMO_GYM_OTEL_CONSOLE_PATH", path},
                     {"OTEL_METRIC_EXPORT_INTERVAL", "3600000"}});
  auto settings = resolve_settings(boost::json::object{}, env);
  {
    MetricsPipeline pipeline(settings, {"orchestrator", "orchestrator"}, "abc123", env);
    ASSERT_TRUE(pipeline.active());
    pipeline.provider().create_gauge<std::int64_t>("gym.servers.active", "").record(0);
    EXPECT_TRUE(pipeline.shutdown());  // a process shorter than one interval still exports
  }
  std::ifstream in(path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  auto v = boost::json::parse(line);
  std::map<std::string, std::string> resource;
  for (const auto& kv : v.at("resourceMetrics").at(0).at("resource").at("attributes").as_array()) {
    const auto& value = kv.at("value").as_object();
    if (value.contains("stringValue")) {
      resource[std::string(kv.at("key").as_string())] =
          std::string(value.at("stringValue").as_string());
    }
  }
  EXPECT_EQ(resource["service.name"], "nemo-gym/orchestrator");
  EXPECT_EQ(resource["nemo.run.id"], "abc123");
  EXPECT_EQ(resource["service.instance.id"], "abc123-orchestrator-" + std::to_string(::getpid()));
  const auto& metric = v.at("resourceMetrics").at(0).at("scopeMetrics").at(0).at("metrics").at(0);
  EXPECT_EQ(metric.at("name").as_string(), "gym.servers.active");
  EXPECT_EQ(metric.at("gauge").at("dataPoints").at(0).at("asInt").as_string(), "0");
  EXPECT_FALSE(std::getline(in, line));
  std::filesystem::remove(path);
}

TEST(MetricsPipeline, StatsCountExportsAndOtlpDropsAndOutliveShutdown) {
  // Port 1 (tcpmux) on loopback: nothing listens there on a test machine, connect is refused.
  // The default protocol, gRPC: the refused channel fails the export (UNAVAILABLE).
  auto env = env_of({{"NEMO_GYM_OTEL_ENABLED", "1"},
                     {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1"},
                     {"OTEL_METRIC_EXPORT_INTERVAL", "3600000"},
                     {"OTEL_EXPORTER_OTLP_TIMEOUT", "300"}});
  MetricsPipeline pipeline(resolve_settings(boost::json::object{}, env),
                           {"mcqa", "resources_servers"}, "r", env);
  ASSERT_TRUE(pipeline.stats().otlp.has_value());
  EXPECT_EQ(pipeline.stats().reader.exports, 0u);
  pipeline.provider().create_counter<std::int64_t>("t.c").add(1);
  EXPECT_FALSE(pipeline.shutdown());
  const auto s = pipeline.stats();
  EXPECT_EQ(s.reader.exports, 1u);
  EXPECT_EQ(s.reader.failures, 1u);
  ASSERT_TRUE(s.otlp.has_value());
  EXPECT_EQ(s.otlp->batches_dropped, 1u);
  EXPECT_EQ(s.otlp->items_dropped, 1u);
  EXPECT_EQ(s.otlp->batches_sent, 0u);

  MetricsPipeline inactive(resolve_settings(boost::json::object{}, env_of({})),
                           {"mcqa", "resources_servers"}, "r", env_of({}));
  EXPECT_FALSE(inactive.stats().otlp.has_value());
  EXPECT_EQ(inactive.stats().reader.exports, 0u);
}

// `metrics_enabled: false` (traces only): the process still says what its settings ignore.
TEST(ProcessTelemetry, ATracesOnlyProcessStillWarnsAboutItsSettings) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("gym_traces_only_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto env = env_of({{"NEMO_GYM_OTEL_CONSOLE_PATH", (dir / "t.jsonl").string()}});
  const auto config = boost::json::parse(
                          R"({"telemetry": {"enabled": true, "exporter": "console",
                              "metrics_enabled": false, "span_groups": "all",
                              "no_such_key": 1}})")
                          .as_object();
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  spdlog::default_logger()->sinks().push_back(sink);
  {
    ProcessTelemetry telemetry(metrics_pipelines(), resolve_settings(config, env),
                               {"mcqa", "resources_servers"}, "run", ProcessRole::resources_server,
                               env);
    EXPECT_TRUE(telemetry.tracer().on(SpanGroup::verify));
  }
  spdlog::default_logger()->sinks().pop_back();
  EXPECT_NE(log.str().find("ignoring unknown config keys: telemetry.no_such_key"),
            std::string::npos)
      << log.str();
  std::filesystem::remove_all(dir);
}

TEST(MetricsPipeline, OtlpSettingsAreCheckedAtConstruction) {
  auto env = env_of({{"NEMO_GYM_OTEL_ENABLED", "1"}});
  auto settings = resolve_settings(boost::json::object{}, env);
  settings.otlp_protocol = "http/2";  // as if it came from a config resolved elsewhere
  EXPECT_THROW(MetricsPipeline(settings, {"mcqa", "resources_servers"}, "r", env),
               core::ConfigError);
}

}  // namespace
}  // namespace gym::exporters
