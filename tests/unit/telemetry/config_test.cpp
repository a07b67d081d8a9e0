#include "telemetry/config.h"
#include "expect.h"
#include "telemetry/process_telemetry.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include <boost/json.hpp>

#include "telemetry_test_support.h"

namespace gym::telemetry {
namespace {

using core::ConfigError;
using gym::test::config_error_of;
using testing::FakeEnv;

boost::json::object config(std::string_view json_text) {
  return boost::json::parse(json_text).as_object();
}

TEST(TelemetryConfig, DefaultsWithoutABlock) {
  FakeEnv env;
  auto s = resolve_settings(config("{}"), env.get());
  EXPECT_FALSE(s.enabled);
  EXPECT_FALSE(s.active());
  EXPECT_EQ(s.service_name, "nemo-gym");
  EXPECT_TRUE(s.service_name_per_server);
  EXPECT_EQ(s.span_groups, "default");
  EXPECT_TRUE(s.span_group_set.has(SpanGroup::job));
  EXPECT_FALSE(s.span_group_set.has(SpanGroup::verify));
  EXPECT_EQ(s.exporter, ExporterKind::otlp);
  EXPECT_TRUE(s.traces_enabled);
  EXPECT_TRUE(s.metrics_enabled);
  EXPECT_FALSE(s.logs_enabled);
  EXPECT_FALSE(s.run_id);
  EXPECT_FALSE(s.user_id);
  EXPECT_FALSE(s.memory_profiling_enabled);
  EXPECT_EQ(s.memory_profiling_interval_seconds, 1.0);
  EXPECT_FALSE(s.otlp_endpoint);
  EXPECT_FALSE(s.otlp_protocol);
  EXPECT_FALSE(s.otlp_headers);
  EXPECT_TRUE(s.instrument_aiohttp);
  EXPECT_FALSE(s.prometheus_port);
  EXPECT_EQ(s.prometheus_host, "127.0.0.1");
  EXPECT_FALSE(s.console_path);
  EXPECT_FALSE(s.sdk_disabled);
  EXPECT_EQ(s.export_interval.count(), 10000);
  EXPECT_EQ(s.export_timeout.count(), 10000);
  EXPECT_TRUE(s.warnings.empty());
  auto null_block = resolve_settings(config(R"({"telemetry": null})"), env.get());
  EXPECT_FALSE(null_block.enabled);
}

TEST(TelemetryConfig, EveryKeyFromYaml) {
  FakeEnv env;
  auto s = resolve_settings(config(R"({"telemetry": {
      "enabled": true, "service_name": "svc", "service_name_per_server": false,
      "span_groups": "per_rollout", "exporter": "console", "traces_enabled": false,
      "metrics_enabled": true, "logs_enabled": false, "run_id": "r1",
      "memory_profiling": {"enabled": true, "interval_seconds": 0.25},
      "otlp_endpoint": "http://collector:4318", "otlp_protocol": "http/json",
      "otlp_headers": "a=b", "instrument_aiohttp": false,
      "prometheus": {"port": 9464, "host": "0.0.0.0"}, "console_path": "/tmp/t.jsonl",
      "export_strategy": "x", "export_rank": 0}})"),
                            env.get());
  EXPECT_TRUE(s.enabled);
  EXPECT_TRUE(s.active());
  EXPECT_EQ(s.service_name, "svc");
  EXPECT_FALSE(s.service_name_per_server);
  EXPECT_TRUE(s.span_group_set.has(SpanGroup::verify));
  EXPECT_FALSE(s.span_group_set.has(SpanGroup::job));
  EXPECT_EQ(s.exporter, ExporterKind::console);
  EXPECT_FALSE(s.traces_enabled);
  EXPECT_TRUE(s.metrics_active());
  EXPECT_EQ(s.run_id, "r1");
  EXPECT_TRUE(s.memory_profiling_enabled);
  EXPECT_EQ(s.memory_profiling_interval_seconds, 0.25);
  EXPECT_EQ(s.otlp_endpoint, "http://collector:4318");
  EXPECT_EQ(s.otlp_protocol, "http/json");
  EXPECT_EQ(s.otlp_headers, "a=b");
  EXPECT_FALSE(s.instrument_aiohttp);
  EXPECT_EQ(s.prometheus_port, 9464);
  EXPECT_EQ(s.prometheus_host, "0.0.0.0");
  EXPECT_EQ(s.console_path, "/tmp/t.jsonl");
  EXPECT_TRUE(s.warnings.empty());  // export_strategy and export_rank are known removed keys
}

TEST(TelemetryConfig, UnknownKeysWarnOnce) {
  FakeEnv env;
  auto s = resolve_settings(config(R"({"telemetry": {"enabeld": true, "prometheus": {"prt": 1}}})"),
                            env.get());
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_CONTAINS(s.warnings[0], "telemetry.enabeld");
  EXPECT_CONTAINS(s.warnings[0], "telemetry.prometheus.prt");
}

TEST(TelemetryConfig, PrecedenceIsPrimaryThenLensThenYaml) {
  auto yaml = config(R"({"telemetry": {"enabled": false, "span_groups": "default",
                                        "exporter": "otlp", "run_id": "yaml-run"}})");
  FakeEnv env;
  env.set("NEMO_LENS_ENABLED", "1");
  env.set("NEMO_LENS_SPAN_GROUPS", "all");
  env.set("NEMO_LENS_RUN_ID", "lens-run");
  auto s = resolve_settings(yaml, env.get());
  EXPECT_TRUE(s.enabled);  // NEMO_LENS_* beats YAML
  EXPECT_EQ(s.span_groups, "all");
  EXPECT_TRUE(s.span_group_set.has(SpanGroup::sandbox));
  EXPECT_EQ(s.run_id, "lens-run");

  env.set("NEMO_GYM_OTEL_ENABLED", "0");  // NEMO_GYM_OTEL_* beats NEMO_LENS_*
  env.set("NEMO_GYM_OTEL_SPAN_GROUPS", "verify");
  env.set("NEMO_GYM_OTEL_RUN_ID", "gym-run");
  s = resolve_settings(yaml, env.get());
  EXPECT_FALSE(s.enabled);
  EXPECT_TRUE(s.span_group_set.has(SpanGroup::verify));
  EXPECT_FALSE(s.span_group_set.has(SpanGroup::job));
  EXPECT_EQ(s.run_id, "gym-run");

  env.set("NEMO_GYM_OTEL_ENABLED", "   ");  // whitespace only = unset
  s = resolve_settings(yaml, env.get());
  EXPECT_TRUE(s.enabled);
}

TEST(TelemetryConfig, EveryVariableIsRead) {
  FakeEnv env;
  env.set("NEMO_GYM_OTEL_ENABLED", "yes");
  env.set("NEMO_GYM_OTEL_EXPORTER", "Console");
  env.set("NEMO_GYM_OTEL_TRACES_ENABLED", "off");
  env.set("NEMO_LENS_METRICS_ENABLED", "ON");
  env.set("NEMO_GYM_OTEL_LOGS_ENABLED", "true");
  env.set("NEMO_LENS_USER_ID", "alice");
  env.set("NEMO_GYM_OTEL_SERVICE_NAME_PER_SERVER", "false");
  env.set("NEMO_GYM_OTEL_INSTRUMENT_AIOHTTP", "0");
  env.set("NEMO_GYM_OTEL_MEMORY_PROFILING_ENABLED", "1");
  env.set("NEMO_GYM_OTEL_MEMORY_PROFILING_INTERVAL_SECONDS", "2.5");
  env.set("NEMO_GYM_OTEL_PROMETHEUS_PORT", "9100");
  env.set("NEMO_GYM_OTEL_PROMETHEUS_HOST", "0.0.0.0");
  env.set("NEMO_GYM_OTEL_CONSOLE_PATH", "/tmp/x.jsonl");
  env.set("OTEL_SERVICE_NAME", "custom");
  env.set("OTEL_METRIC_EXPORT_INTERVAL", "60000");
  auto s = resolve_settings(config(R"({"telemetry": {"service_name": "yaml-name"}})"), env.get());
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.exporter, ExporterKind::console);
  EXPECT_FALSE(s.traces_enabled);
  EXPECT_TRUE(s.metrics_enabled);
  EXPECT_TRUE(s.logs_enabled);
  ASSERT_EQ(s.warnings.size(), 1u);  // logs_enabled has no effect with the console exporter
  EXPECT_FALSE(s.logs_active());
  EXPECT_EQ(s.user_id, "alice");
  EXPECT_FALSE(s.service_name_per_server);
  EXPECT_FALSE(s.instrument_aiohttp);
  EXPECT_TRUE(s.memory_profiling_enabled);
  EXPECT_EQ(s.memory_profiling_interval_seconds, 2.5);
  EXPECT_EQ(s.prometheus_port, 9100);
  EXPECT_EQ(s.prometheus_host, "0.0.0.0");
  EXPECT_EQ(s.console_path, "/tmp/x.jsonl");
  EXPECT_EQ(s.service_name, "custom");
  EXPECT_EQ(s.export_interval.count(), 60000);
  EXPECT_EQ(s.export_timeout.count(), 30000);  // min(30000, interval)
}

TEST(TelemetryConfig, SdkDisabledWins) {
  FakeEnv env;
  env.set("NEMO_GYM_OTEL_ENABLED", "true");
  env.set("OTEL_SDK_DISABLED", "TRUE");
  auto s = resolve_settings(config("{}"), env.get());
  EXPECT_TRUE(s.enabled);
  EXPECT_TRUE(s.sdk_disabled);
  EXPECT_FALSE(s.active());
  EXPECT_FALSE(s.metrics_active());
  EXPECT_TRUE(child_environment(s, "abc").empty());
}

TEST(TelemetryConfig, BooleanSpellings) {
  for (const char* t : {"1", "true", "TRUE", " yes ", "On"}) EXPECT_TRUE(parse_bool("V", t)) << t;
  for (const char* f : {"0", "false", "No", "OFF", " false"}) {
    EXPECT_FALSE(parse_bool("V", f)) << f;
  }
  std::string message = config_error_of([] { parse_bool("NEMO_GYM_OTEL_ENABLED", "maybe"); });
  EXPECT_CONTAINS(message, "NEMO_GYM_OTEL_ENABLED");
  EXPECT_CONTAINS(message, "maybe");
  EXPECT_CONTAINS(message, "1, true, yes, on");
  EXPECT_CONTAINS(message, "0, false, no, off");

  FakeEnv env;
  env.set("NEMO_LENS_TRACES_ENABLED", "2");
  message = config_error_of([&] { resolve_settings(config("{}"), env.get()); });
  EXPECT_CONTAINS(message, "NEMO_LENS_TRACES_ENABLED='2'");
  FakeEnv sdk;
  sdk.set("OTEL_SDK_DISABLED", "disable");
  message = config_error_of([&] { resolve_settings(config("{}"), sdk.get()); });
  EXPECT_CONTAINS(message, "OTEL_SDK_DISABLED");
}

TEST(TelemetryConfig, YamlErrorsNameTheKey) {
  FakeEnv env;
  auto message = config_error_of(
      [&] { resolve_settings(config(R"({"telemetry": {"enabled": "sometimes"}})"), env.get()); });
  EXPECT_CONTAINS(message, "telemetry.enabled");
  message = config_error_of(
      [&] { resolve_settings(config(R"({"telemetry": {"exporter": "stdout"}})"), env.get()); });
  EXPECT_CONTAINS(message, "telemetry.exporter");
  EXPECT_CONTAINS(message, "'stdout'");
  EXPECT_CONTAINS(message, "otlp, console");
  message = config_error_of([&] {
    resolve_settings(config(R"({"telemetry": {"memory_profiling": {"interval_seconds": 0}}})"),
                     env.get());
  });
  EXPECT_CONTAINS(message, "telemetry.memory_profiling.interval_seconds");
  message = config_error_of([&] {
    resolve_settings(config(R"({"telemetry": {"memory_profiling": {"interval_seconds": "x"}}})"),
                     env.get());
  });
  EXPECT_CONTAINS(message, "telemetry.memory_profiling.interval_seconds");
  message = config_error_of([&] {
    resolve_settings(config(R"({"telemetry": {"prometheus": {"port": 70000}}})"), env.get());
  });
  EXPECT_CONTAINS(message, "telemetry.prometheus.port");
  message = config_error_of([&] { resolve_settings(config(R"({"telemetry": 5})"), env.get()); });
  EXPECT_CONTAINS(message, "`telemetry`");
}

TEST(TelemetryConfig, VariableErrorsNameTheVariable) {
  auto fails_with = [](const char* var, const char* value, std::string_view expected) {
    FakeEnv env;
    env.set(var, value);
    std::string message = config_error_of([&] { resolve_settings(config("{}"), env.get()); });
    EXPECT_CONTAINS(message, var);
    EXPECT_CONTAINS(message, expected);
  };
  fails_with("NEMO_GYM_OTEL_EXPORTER", "stdout", "'stdout'");
  fails_with("NEMO_LENS_EXPORTER", "jaeger", "otlp, console");
  fails_with("NEMO_GYM_OTEL_MEMORY_PROFILING_INTERVAL_SECONDS", "-1", "'-1'");
  fails_with("NEMO_GYM_OTEL_PROMETHEUS_PORT", "http", "'http'");
  fails_with("OTEL_METRIC_EXPORT_INTERVAL", "0", "'0'");
  fails_with("OTEL_METRIC_EXPORT_INTERVAL", "ten", "'ten'");

  FakeEnv env;
  env.set("OTEL_METRIC_EXPORT_INTERVAL", "5000");
  env.set("OTEL_METRIC_EXPORT_TIMEOUT", "6000");
  std::string message = config_error_of([&] { resolve_settings(config("{}"), env.get()); });
  EXPECT_CONTAINS(message, "OTEL_METRIC_EXPORT_TIMEOUT=6000");
  env.set("OTEL_METRIC_EXPORT_TIMEOUT", "4000");
  EXPECT_EQ(resolve_settings(config("{}"), env.get()).export_timeout.count(), 4000);
}

// The share of the shutdown bound a deployment gives its servers (GYM_TELEMETRY_SHUTDOWN_MS) is
// read as the other variables of milliseconds: blank is unset, anything but a positive whole
// number is an error naming the variable; more than the bound is the bound.
TEST(ShutdownBound, IsReadLikeTheOtherVariablesOfMilliseconds) {
  FakeEnv env;
  EXPECT_EQ(shutdown_bound(env.get()), kShutdownBound);
  env.set(kShutdownBoundVariable, " ");
  EXPECT_EQ(shutdown_bound(env.get()), kShutdownBound);
  env.set(kShutdownBoundVariable, " 4000 ");
  EXPECT_EQ(shutdown_bound(env.get()), std::chrono::milliseconds(4000));
  env.set(kShutdownBoundVariable, "1");
  EXPECT_EQ(shutdown_bound(env.get()), std::chrono::milliseconds(1));
  env.set(kShutdownBoundVariable, "60000");
  EXPECT_EQ(shutdown_bound(env.get()), kShutdownBound);
  for (const std::string bad : {"0", "-1", "4s", "ten", "4000.5", "99999999999999999999"}) {
    SCOPED_TRACE(bad);
    env.set(kShutdownBoundVariable, bad);
    EXPECT_EQ(config_error_of([&] { (void)shutdown_bound(env.get()); }),
              "config error: GYM_TELEMETRY_SHUTDOWN_MS='" + bad +
                  "' must be a positive whole number of milliseconds");
  }
}

TEST(SpanGroups, PresetsGroupsAndErrors) {
  auto all = resolve_span_groups("all", "X");
  for (std::size_t i = 0; i < kSpanGroupCount; ++i) {
    EXPECT_TRUE(all.has(static_cast<SpanGroup>(i)));
  }
  auto mixed = resolve_span_groups(" Verify , ,default,checkpoint,", "X");
  EXPECT_TRUE(mixed.has(SpanGroup::verify));
  EXPECT_TRUE(mixed.has(SpanGroup::job));
  EXPECT_FALSE(mixed.has(SpanGroup::agent));
  EXPECT_TRUE(resolve_span_groups("", "X").none());
  EXPECT_TRUE(resolve_span_groups("optimizer,step", "X").none());  // accepted, never emitted
  std::string message =
      config_error_of([] { resolve_span_groups("server,rolout", "NEMO_GYM_OTEL_SPAN_GROUPS"); });
  EXPECT_EQ(message,
            "config error: unknown span group or preset 'rolout' in NEMO_GYM_OTEL_SPAN_GROUPS; "
            "valid names: agent, all, checkpoint, default, evaluate, forward_backward, "
            "http_client, job, load_checkpoint, model_call, model_init, optimizer, per_rollout, "
            "rollout, sandbox, server, step, verify");
  FakeEnv env;
  message = config_error_of([&] {
    resolve_settings(config(R"({"telemetry": {"span_groups": "per_step"}})"), env.get());
  });
  EXPECT_CONTAINS(message, "'per_step' in telemetry.span_groups");
}

TEST(RunId, Precedence) {
  FakeEnv env;
  TelemetrySettings s;
  env.set("SLURM_JOB_ID", "777");
  EXPECT_EQ(resolve_run_id(s, env.get(), std::string("served")), "served");
  EXPECT_EQ(resolve_run_id(s, env.get()), "777");
  s.run_id = "own";
  EXPECT_EQ(resolve_run_id(s, env.get(), std::string("served")), "own");
  FakeEnv empty;
  TelemetrySettings none;
  std::string generated = resolve_run_id(none, empty.get());
  ASSERT_EQ(generated.size(), 12u);
  EXPECT_EQ(generated.find_first_not_of("0123456789abcdef"), std::string::npos) << generated;
  EXPECT_NE(generate_run_id(), generate_run_id());

  FakeEnv lens;
  lens.set("NEMO_LENS_RUN_ID", "lens");
  auto resolved = resolve_settings(config(R"({"telemetry": {"run_id": "yaml"}})"), lens.get());
  EXPECT_EQ(resolve_run_id(resolved, lens.get()), "lens");
}

TEST(RunId, ChildrenGetOnlyTheRunId) {
  TelemetrySettings s;
  EXPECT_TRUE(child_environment(s, "abc").empty());
  s.enabled = true;
  auto env = child_environment(s, "abc");
  ASSERT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0].first, "NEMO_GYM_OTEL_RUN_ID");
  EXPECT_EQ(env[0].second, "abc");
}

TEST(KeyValues, ParsingAndPercentDecoding) {
  auto kv = parse_key_values("a=1, b = two%2Cthree ,,c=%zz");
  ASSERT_TRUE(kv);
  ASSERT_EQ(kv->size(), 3u);
  EXPECT_EQ((*kv)[1].second, "two,three");
  EXPECT_EQ((*kv)[2].second, "%zz");
  EXPECT_FALSE(parse_key_values("a=1,b"));
  EXPECT_FALSE(parse_key_values("=1"));
  EXPECT_EQ(parse_key_values("")->size(), 0u);
  EXPECT_EQ(percent_decode("a%20b%"), "a b%");
}

}  // namespace
}  // namespace gym::telemetry
