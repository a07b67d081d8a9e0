// The OTLP/HTTP settings (docs/reference/telemetry.md#every-key-and-variable): precedence,
// defaults, and the startup errors a process gets through the check of its pipeline factory
// (exporters::metrics_pipelines()).
#include "exporters/otlp/otlp_settings.h"
#include "expect.h"

#include <gtest/gtest.h>

#include <cstdio>
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

TEST(OtlpSettings, DefaultIsGrpcToLocalhost4317) {
  // Upstream's default protocol and endpoint, for every signal.
  FakeEnv env;
  TelemetrySettings s;
  for (Signal signal : {Signal::metrics, Signal::traces, Signal::logs}) {
    SCOPED_TRACE(std::string(signal_name(signal)));
    const auto o = resolve_otlp(s, env.get(), signal);
    EXPECT_EQ(o.protocol, OtlpProtocol::grpc);
    EXPECT_EQ(o.url, "http://localhost:4317");
    EXPECT_FALSE(o.insecure);
    const GrpcChannel channel = grpc_channel(o);
    EXPECT_EQ(channel.target, "localhost:4317");
    EXPECT_FALSE(channel.tls);
    EXPECT_TRUE(o.headers.empty());
    EXPECT_EQ(o.timeout.count(), 10000);
    EXPECT_EQ(o.compression, Compression::none);
  }
  // An endpoint set for grpc is the target as it is: no /v1/<signal> is appended.
  env.set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317/");
  auto o = resolve_otlp(s, env.get(), Signal::traces);
  EXPECT_EQ(o.url, "http://collector:4317/");
  EXPECT_EQ(grpc_channel(o).target, "collector:4317");
}

TEST(OtlpSettings, DefaultsAndPrecedence) {
  FakeEnv env;
  TelemetrySettings s;
  // The http/* protocols keep their default port 4318 and the /v1/<signal> paths.
  env.set("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
  auto o = resolve_otlp(s, env.get());
  EXPECT_EQ(o.protocol, OtlpProtocol::http_protobuf);
  EXPECT_EQ(o.url, "http://localhost:4318/v1/metrics");
  EXPECT_TRUE(o.headers.empty());
  EXPECT_EQ(o.timeout.count(), 10000);
  EXPECT_EQ(o.compression, Compression::none);
  EXPECT_EQ(resolve_otlp(s, env.get(), Signal::traces).url, "http://localhost:4318/v1/traces");
  EXPECT_EQ(resolve_otlp(s, env.get(), Signal::logs).url, "http://localhost:4318/v1/logs");
  env.set("OTEL_EXPORTER_OTLP_PROTOCOL", "");

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
  // The traces and logs signals ignore the metrics-specific variables.
  EXPECT_EQ(resolve_otlp(s, env.get(), Signal::traces).url, "https://generic:4318/v1/traces");
  EXPECT_EQ(resolve_otlp(s, env.get(), Signal::logs).url, "https://generic:4318/v1/logs");
}

TEST(OtlpSettings, PerSignalVariablesWinForEverySignal) {
  FakeEnv env;
  TelemetrySettings s;
  env.set("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc");
  env.set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4317");
  env.set("OTEL_EXPORTER_OTLP_HEADERS", "x-scope=generic");
  env.set("OTEL_EXPORTER_OTLP_TIMEOUT", "2000");
  env.set("OTEL_EXPORTER_OTLP_COMPRESSION", "none");
  env.set("OTEL_EXPORTER_OTLP_INSECURE", "false");
  // Logs over http/json to their own collector; traces over grpc with their own settings.
  env.set("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "http/json");
  env.set("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "https://logs.example:4318/ingest/logs");
  env.set("OTEL_EXPORTER_OTLP_LOGS_HEADERS", "x-scope=logs");
  env.set("OTEL_EXPORTER_OTLP_LOGS_TIMEOUT", "300");
  env.set("OTEL_EXPORTER_OTLP_LOGS_COMPRESSION", "gzip");
  env.set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "traces.example:14317");
  env.set("OTEL_EXPORTER_OTLP_TRACES_INSECURE", "true");
  env.set("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip");

  const auto logs = resolve_otlp(s, env.get(), Signal::logs);
  EXPECT_EQ(logs.protocol, OtlpProtocol::http_json);
  EXPECT_EQ(logs.url, "https://logs.example:4318/ingest/logs");  // verbatim
  ASSERT_EQ(logs.headers.size(), 1u);
  EXPECT_EQ(logs.headers[0].second, "logs");
  EXPECT_EQ(logs.timeout.count(), 300);
  EXPECT_EQ(logs.compression, Compression::gzip);

  const auto traces = resolve_otlp(s, env.get(), Signal::traces);
  EXPECT_EQ(traces.protocol, OtlpProtocol::grpc);
  EXPECT_EQ(traces.url, "traces.example:14317");
  EXPECT_EQ(traces.insecure, true);
  EXPECT_EQ(grpc_channel(traces).target, "traces.example:14317");
  EXPECT_FALSE(grpc_channel(traces).tls);  // the signal's INSECURE=true wins
  EXPECT_EQ(traces.headers[0].second, "generic");
  EXPECT_EQ(traces.timeout.count(), 2000);
  EXPECT_EQ(traces.compression, Compression::gzip);

  const auto metrics = resolve_otlp(s, env.get(), Signal::metrics);
  EXPECT_EQ(metrics.protocol, OtlpProtocol::grpc);
  EXPECT_EQ(metrics.url, "http://generic:4317");
  EXPECT_EQ(metrics.insecure, false);
  // http:// with INSECURE=false: TLS, as upstream's SDK decides.
  EXPECT_TRUE(grpc_channel(metrics).tls);
  EXPECT_EQ(metrics.compression, Compression::none);

  // The per-signal protocol also picks that protocol's default endpoint.
  FakeEnv mixed;
  mixed.set("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf");
  EXPECT_EQ(resolve_otlp(s, mixed.get(), Signal::metrics).url, "http://localhost:4318/v1/metrics");
  EXPECT_EQ(resolve_otlp(s, mixed.get(), Signal::traces).url, "http://localhost:4317");
}

TEST(OtlpSettings, GrpcChannelTargetAndSecurity) {
  struct Case {
    const char* endpoint;
    std::optional<bool> insecure;
    const char* target;
    bool tls;
  };
  for (const Case& c : std::vector<Case>{
           {"http://localhost:4317", std::nullopt, "localhost:4317", false},
           {"HTTP://Collector:4317/", std::nullopt, "Collector:4317", false},
           {"https://collector:4317", std::nullopt, "collector:4317", true},
           {"https://collector:4317", true, "collector:4317", true},  // https is always TLS
           {"http://collector:4317", false, "collector:4317", true},
           {"collector:4317", std::nullopt, "collector:4317", true},  // INSECURE defaults to false
           {"collector:4317", true, "collector:4317", false},
           {"http://[::1]:4317", std::nullopt, "[::1]:4317", false},
           {"127.0.0.1:4317", true, "127.0.0.1:4317", false},
           {"http://collector", std::nullopt, "collector:80", false},
           {"https://collector", std::nullopt, "collector:443", true},
       }) {
    SCOPED_TRACE(c.endpoint);
    const GrpcChannel channel = grpc_channel(c.endpoint, c.insecure);
    EXPECT_EQ(channel.target, c.target);
    EXPECT_EQ(channel.tls, c.tls);
  }
}

TEST(OtlpSettings, GrpcEndpointErrors) {
  FakeEnv env;
  env.set("NEMO_GYM_OTEL_ENABLED", "1");
  // A path is the HTTP protocols' (a common slip: the 4318 URL with grpc): a startup error.
  env.set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://collector:4318/v1/metrics");
  std::string message = config_error_of([&] { resolve_checked_settings(config("{}"), env.get()); });
  EXPECT_CONTAINS(message, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
  EXPECT_CONTAINS(message, "'http://collector:4318/v1/metrics'");
  EXPECT_CONTAINS(message, "has a path");
  for (const char* bad : {"ftp://collector:4317", "http://collector:4317?x=1",
                          "user@collector:4317", "http://", "://collector"}) {
    env.set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", bad);
    message = config_error_of([&] { resolve_checked_settings(config("{}"), env.get()); });
    EXPECT_CONTAINS(message, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") << bad;
  }
  env.set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "");
  env.set("OTEL_EXPORTER_OTLP_INSECURE", "maybe");
  message = config_error_of([&] { resolve_checked_settings(config("{}"), env.get()); });
  EXPECT_CONTAINS(message, "OTEL_EXPORTER_OTLP_INSECURE");
  EXPECT_CONTAINS(message, "maybe");
  env.set("OTEL_EXPORTER_OTLP_INSECURE", "");
  // gRPC metadata: keys are sent lowercased; what gRPC cannot carry is refused at startup, never
  // naming the value (it may be a secret).
  env.set("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20secret,X-Tenant=a");
  EXPECT_NO_THROW(resolve_checked_settings(config("{}"), env.get()));
  env.set("OTEL_EXPORTER_OTLP_HEADERS", "bad key=1");
  message = config_error_of([&] { resolve_checked_settings(config("{}"), env.get()); });
  EXPECT_CONTAINS(message, "OTEL_EXPORTER_OTLP_HEADERS");
  EXPECT_CONTAINS(message, "gRPC metadata");
  env.set("OTEL_EXPORTER_OTLP_HEADERS", "grpc-timeout=1S");
  message = config_error_of([&] { resolve_checked_settings(config("{}"), env.get()); });
  EXPECT_CONTAINS(message, "reserved by gRPC");
  env.set("OTEL_EXPORTER_OTLP_HEADERS", "authorization=s%0Aecret");
  message = config_error_of([&] { resolve_checked_settings(config("{}"), env.get()); });
  EXPECT_CONTAINS(message, "not printable ASCII");
  EXPECT_NOT_CONTAINS(message, "ecret");
  EXPECT_EQ(grpc_metadata_problem("X-Tenant.Id_2", "a b~"), "");
  EXPECT_EQ(grpc_metadata_problem("trace-bin", std::string("\x00\xff", 2)), "");  // binary
  EXPECT_NE(grpc_metadata_problem("x:y", "1"), "");
  EXPECT_NE(grpc_metadata_problem("GRPC-Encoding", "gzip"), "");
  // ... which HTTP headers need not be.
  env.set("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
  env.set("OTEL_EXPORTER_OTLP_HEADERS", "bad key=1");
  EXPECT_NO_THROW(resolve_checked_settings(config("{}"), env.get()));
}

TEST(OtlpSettings, InvalidValuesAreStartupErrors) {
  FakeEnv env;
  env.set("NEMO_GYM_OTEL_ENABLED", "1");
  // grpc is valid now; anything else lists the three valid values.
  env.set("OTEL_EXPORTER_OTLP_PROTOCOL", "GRPC");
  EXPECT_NO_THROW(resolve_checked_settings(config("{}"), env.get()));
  env.set("OTEL_EXPORTER_OTLP_PROTOCOL", "thrift");
  std::string message = config_error_of([&] { resolve_checked_settings(config("{}"), env.get()); });
  EXPECT_EQ(message,
            "config error: OTEL_EXPORTER_OTLP_PROTOCOL: unsupported OTLP protocol 'thrift'; valid "
            "values: grpc, http/protobuf, http/json");
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
  off.set("OTEL_EXPORTER_OTLP_PROTOCOL", "thrift");
  EXPECT_NO_THROW(resolve_checked_settings(config("{}"), off.get()));
  off.set("NEMO_GYM_OTEL_ENABLED", "1");
  off.set("NEMO_GYM_OTEL_EXPORTER", "console");
  EXPECT_NO_THROW(resolve_checked_settings(config("{}"), off.get()));
  FakeEnv yaml;
  message = config_error_of([&] {
    resolve_checked_settings(config(R"({"telemetry": {"enabled": true, "otlp_protocol": "zmq"}})"),
                             yaml.get());
  });
  EXPECT_CONTAINS(message, "telemetry.otlp_protocol");
  EXPECT_CONTAINS(message, "grpc, http/protobuf, http/json");
}

// The check alone, as the orchestrator, the servers and the collector run it: the same error as
// the pipeline's constructor, and nothing checked when the exporter is not OTLP.
TEST(OtlpSettings, CheckExporterSettingsThrowsWhatThePipelineWould) {
  FakeEnv env;
  env.set("NEMO_GYM_OTEL_ENABLED", "1");
  env.set("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/xml");
  const auto settings = telemetry::resolve_settings(config("{}"), env.get());
  const std::string checked =
      config_error_of([&] { check_exporter_settings(settings, env.get()); });
  const std::string built = config_error_of([&] {
    MetricsPipeline(settings, {"mcqa", "resources_servers"}, "run", env.get());
  });
  EXPECT_EQ(checked,
            "config error: OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: unsupported OTLP protocol "
            "'http/xml'; valid values: grpc, http/protobuf, http/json");
  EXPECT_EQ(checked, built);
  env.set("NEMO_GYM_OTEL_METRICS_ENABLED", "0");
  EXPECT_NO_THROW(
      check_exporter_settings(telemetry::resolve_settings(config("{}"), env.get()), env.get()));
}

// TLS files are loaded at startup: one that would fail every export stops the process with a
// message naming its variable (the working files are exercised end to end by otlp_decode_test).
TEST(OtlpSettings, TlsFilesThatCannotBeLoadedAreConfigErrors) {
  const std::string dir = ::testing::TempDir();
  const std::string not_pem = dir + "/gym_not_a_certificate.pem";
  {
    std::FILE* f = std::fopen(not_pem.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("this is not a certificate\n", f);
    std::fclose(f);
  }
  TelemetrySettings s;
  for (const std::string& file : {dir + "/gym_no_such_file.pem", not_pem}) {
    SCOPED_TRACE(file);
    FakeEnv env;
    env.set("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", file);
    std::string message = config_error_of([&] { resolve_otlp(s, env.get(), Signal::traces); });
    EXPECT_CONTAINS(message, "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE");
    EXPECT_CONTAINS(message, file);
    // Another signal does not read the traces' variable.
    EXPECT_TRUE(resolve_otlp(s, env.get(), Signal::metrics).certificate.empty());

    FakeEnv pair;
    pair.set("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", file);
    pair.set("OTEL_EXPORTER_OTLP_CLIENT_KEY", file);
    message = config_error_of([&] { resolve_otlp(s, pair.get()); });
    EXPECT_CONTAINS(message, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE");
    EXPECT_CONTAINS(message, "client certificate");
  }
  // A certificate without its key, and a key without its certificate.
  FakeEnv env;
  env.set("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", not_pem);
  std::string message = config_error_of([&] { resolve_otlp(s, env.get()); });
  EXPECT_CONTAINS(message,
                  "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE is set but OTEL_EXPORTER_OTLP_CLIENT_KEY");
  FakeEnv key_only;
  key_only.set("OTEL_EXPORTER_OTLP_LOGS_CLIENT_KEY", not_pem);
  message = config_error_of([&] { resolve_otlp(s, key_only.get(), Signal::logs); });
  EXPECT_CONTAINS(message, "OTEL_EXPORTER_OTLP_LOGS_CLIENT_KEY is set but");
  EXPECT_CONTAINS(message, "OTEL_EXPORTER_OTLP_LOGS_CLIENT_CERTIFICATE");
}

}  // namespace
}  // namespace gym::exporters
