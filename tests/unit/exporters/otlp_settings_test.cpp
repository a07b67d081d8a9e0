// The OTLP/HTTP settings (telemetry.md 7.2): precedence, defaults, and the startup errors a
// process gets through the check of its pipeline factory (exporters::metrics_pipelines()).
#include "exporters/otlp/otlp_settings.h"
#include "expect.h"

#include <gtest/gtest.h>

#include <string>

#include <boost/json.hpp>

#include "core/config.h"
#include "exporters/metrics_pipeline.h"
#include "telemetry/process_telemetry.h"
#include "telemetry_test_support.h"

namespace gym::exporters {
namespace {

using core::ConfigError;
using gym::test::config_error_of;
using telemetry::TelemetrySettings;
using telemetry::testing::FakeEnv;

boost::json::object config(std::string_view json_text) {
  return boost::json::parse(json_text).as_object();
}

// The settings of a process as the gym binary resolves them at startup: resolve_settings(), then
// the exporter check of metrics_pipelines().
TelemetrySettings resolve_checked_settings(const boost::json::object& cfg,
                                           const telemetry::GetEnv& getenv) {
  return telemetry::resolve_checked_settings(cfg, getenv, metrics_pipelines());
}

TEST(OtlpSettings, DefaultsAndPrecedence) {
  FakeEnv env;
  TelemetrySettings s;
  auto o = resolve_otlp(s, env.get());
  EXPECT_EQ(o.protocol, OtlpProtocol::http_protobuf);
  EXPECT_EQ(o.url, "http://localhost:4318/v1/metrics");
  EXPECT_TRUE(o.headers.empty());
  EXPECT_EQ(o.timeout.count(), 10000);
  EXPECT_EQ(o.compression, Compression::none);
  EXPECT_EQ(resolve_otlp(s, env.get(), Signal::traces).url, "http://localhost:4318/v1/traces");

  s.otlp_endpoint = "http://yaml:4318/";
  s.otlp_protocol = "http/json";
  s.otlp_headers = "x-from=yaml";
  o = resolve_otlp(s, env.get());
  EXPECT_EQ(o.url, "http://yaml:4318/v1/metrics");
  EXPECT_EQ(o.protocol, OtlpProtocol::http_json);
  ASSERT_EQ(o.headers.size(), 1u);
  EXPECT_EQ(o.headers[0].second, "yaml");

  env.set("OTEL_EXPORTER_OTLP_ENDPOINT", "https://generic:4318");
  env.set("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
  env.set("OTEL_EXPORTER_OTLP_HEADERS", " Authorization = Bearer%20abc , x-b=1");
  env.set("OTEL_EXPORTER_OTLP_TIMEOUT", "2500");
  env.set("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip");
  o = resolve_otlp(s, env.get());
  EXPECT_EQ(o.url, "https://generic:4318/v1/metrics");
  EXPECT_EQ(o.protocol, OtlpProtocol::http_protobuf);
  ASSERT_EQ(o.headers.size(), 2u);
  EXPECT_EQ(o.headers[0], (std::pair<std::string, std::string>{"Authorization", "Bearer abc"}));
  EXPECT_EQ(o.headers[1], (std::pair<std::string, std::string>{"x-b", "1"}));
  EXPECT_EQ(o.timeout.count(), 2500);
  EXPECT_EQ(o.compression, Compression::gzip);

  env.set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://specific:9999/custom/path");
  env.set("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/json");
  env.set("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "only=metrics");
  env.set("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "700");
  env.set("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "none");
  o = resolve_otlp(s, env.get());
  EXPECT_EQ(o.url, "http://specific:9999/custom/path");  // verbatim
  EXPECT_EQ(o.protocol, OtlpProtocol::http_json);
  ASSERT_EQ(o.headers.size(), 1u);
  EXPECT_EQ(o.headers[0].first, "only");
  EXPECT_EQ(o.timeout.count(), 700);
  EXPECT_EQ(o.compression, Compression::none);
  // The traces signal ignores the metrics-specific variables.
  EXPECT_EQ(resolve_otlp(s, env.get(), Signal::traces).url, "https://generic:4318/v1/traces");
}

TEST(OtlpSettings, InvalidValuesAreStartupErrors) {
  FakeEnv env;
  env.set("NEMO_GYM_OTEL_ENABLED", "1");
  env.set("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc");
  std::string message = config_error_of([&] { resolve_checked_settings(config("{}"), env.get()); });
  EXPECT_EQ(message,
            "config error: OTEL_EXPORTER_OTLP_PROTOCOL=grpc: gRPC is not supported yet; use "
            "http/protobuf (port 4318) or http/json");
  env.set("OTEL_EXPORTER_OTLP_PROTOCOL", "thrift");
  message = config_error_of([&] { resolve_checked_settings(config("{}"), env.get()); });
  EXPECT_CONTAINS(message, "'thrift'");
  EXPECT_CONTAINS(message, "http/protobuf, http/json");
  env.set("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
  env.set("OTEL_EXPORTER_OTLP_HEADERS", "secret-without-equals");
  message = config_error_of([&] { resolve_checked_settings(config("{}"), env.get()); });
  EXPECT_CONTAINS(message, "OTEL_EXPORTER_OTLP_HEADERS");
  EXPECT_NOT_CONTAINS(message, "secret-without-equals");
  env.set("OTEL_EXPORTER_OTLP_HEADERS", "");
  env.set("OTEL_EXPORTER_OTLP_COMPRESSION", "brotli");
  message = config_error_of([&] { resolve_checked_settings(config("{}"), env.get()); });
  EXPECT_CONTAINS(message, "brotli");
  env.set("OTEL_EXPORTER_OTLP_COMPRESSION", "");
  env.set("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318");
  message = config_error_of([&] { resolve_checked_settings(config("{}"), env.get()); });
  EXPECT_CONTAINS(message, "OTEL_EXPORTER_OTLP_ENDPOINT");
  EXPECT_CONTAINS(message, "must be an http:// or https:// URL");
  for (const char* bad : {"ftp://collector:4318", "http:/collector:4318", "http://col lector"}) {
    env.set("OTEL_EXPORTER_OTLP_ENDPOINT", bad);
    message = config_error_of([&] { resolve_checked_settings(config("{}"), env.get()); });
    EXPECT_CONTAINS(message, "must be an http:// or https:// URL");
  }
  env.set("OTEL_EXPORTER_OTLP_ENDPOINT", "HTTPS://collector:4318");  // a scheme in any case
  EXPECT_NO_THROW(resolve_checked_settings(config("{}"), env.get()));
  env.set("OTEL_EXPORTER_OTLP_ENDPOINT", "");
  env.set("OTEL_EXPORTER_OTLP_TIMEOUT", "-5");
  message = config_error_of([&] { resolve_checked_settings(config("{}"), env.get()); });
  EXPECT_CONTAINS(message, "OTEL_EXPORTER_OTLP_TIMEOUT");

  // Not checked while telemetry is off or the exporter is console.
  FakeEnv off;
  off.set("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc");
  EXPECT_NO_THROW(resolve_checked_settings(config("{}"), off.get()));
  off.set("NEMO_GYM_OTEL_ENABLED", "1");
  off.set("NEMO_GYM_OTEL_EXPORTER", "console");
  EXPECT_NO_THROW(resolve_checked_settings(config("{}"), off.get()));
  FakeEnv yaml;
  message = config_error_of([&] {
    resolve_checked_settings(config(R"({"telemetry": {"enabled": true, "otlp_protocol": "grpc"}})"),
                             yaml.get());
  });
  EXPECT_CONTAINS(message, "telemetry.otlp_protocol");
}

// The check alone, as the orchestrator, the servers and the collector run it: the same error as
// the pipeline's constructor, and nothing checked when the exporter is not OTLP.
TEST(OtlpSettings, CheckExporterSettingsThrowsWhatThePipelineWould) {
  FakeEnv env;
  env.set("NEMO_GYM_OTEL_ENABLED", "1");
  env.set("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc");
  const auto settings = telemetry::resolve_settings(config("{}"), env.get());
  const std::string checked =
      config_error_of([&] { check_exporter_settings(settings, env.get()); });
  const std::string built = config_error_of([&] {
    MetricsPipeline(settings, {"mcqa", "resources_servers"}, "run", env.get());
  });
  EXPECT_EQ(checked,
            "config error: OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=grpc: gRPC is not supported yet; "
            "use http/protobuf (port 4318) or http/json");
  EXPECT_EQ(checked, built);
  env.set("NEMO_GYM_OTEL_METRICS_ENABLED", "0");
  EXPECT_NO_THROW(
      check_exporter_settings(telemetry::resolve_settings(config("{}"), env.get()), env.get()));
}

}  // namespace
}  // namespace gym::exporters
