// Telemetry settings: the `telemetry:` block, its variables, the run id.
#include "telemetry/config.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <set>

#include <fmt/format.h>
#include <boost/json.hpp>

namespace gym::telemetry {
namespace json = boost::json;
using core::ConfigError;

namespace {

constexpr std::string_view kBlock = "telemetry";

std::string key_path(std::string_view key) { return fmt::format("{}.{}", kBlock, key); }

// A nullable string of the block: absent, null or only whitespace mean "not set".
std::optional<std::string> yaml_string(const json::object& cfg, std::string_view key) {
  const json::value* v = core::find_path(cfg, key_path(key));
  if (!v || v->is_null()) return std::nullopt;
  std::string s = trimmed(core::get_string(cfg, key_path(key), ""));
  if (s.empty()) return std::nullopt;
  return s;
}

bool resolve_bool(const json::object& cfg, const GetEnv& getenv, std::string_view key,
                  std::initializer_list<std::string_view> variables, bool def) {
  if (auto e = first_env(getenv, variables)) return parse_bool(e->name, e->value);
  return core::get_bool(cfg, key_path(key), def);
}

std::optional<std::string> resolve_string(const json::object& cfg, const GetEnv& getenv,
                                          std::string_view key,
                                          std::initializer_list<std::string_view> variables) {
  if (auto e = first_env(getenv, variables)) return e->value;
  return yaml_string(cfg, key);
}

// Top-level keys of the block and of its two sub-blocks.
const std::set<std::string, std::less<>> kKnownKeys{
    "enabled",          "service_name",       "service_name_per_server",
    "span_groups",      "exporter",           "traces_enabled",
    "metrics_enabled",  "logs_enabled",       "run_id",
    "memory_profiling", "otlp_endpoint",      "otlp_protocol",
    "otlp_headers",     "instrument_aiohttp", "prometheus",
    "console_path"};
const std::set<std::string, std::less<>> kRemovedKeys{"export_strategy", "export_rank"};
const std::set<std::string, std::less<>> kMemoryKeys{"enabled", "interval_seconds"};
const std::set<std::string, std::less<>> kPrometheusKeys{"port", "host"};

void check_block_shape(const json::object& cfg, TelemetrySettings& out) {
  const json::value* block = cfg.if_contains(kBlock);
  if (!block || block->is_null()) return;
  if (!block->is_object()) {
    throw ConfigError(
        fmt::format("config error: config key `telemetry` must be a mapping of "
                    "telemetry settings, got {}",
                    json::serialize(*block)));
  }
  std::vector<std::string> unknown;
  auto check_sub = [&](const json::object& b, std::string_view sub,
                       const std::set<std::string, std::less<>>& known) {
    const json::value* v = b.if_contains(sub);
    if (!v || v->is_null()) return;
    if (!v->is_object()) {
      throw ConfigError(
          fmt::format("config error: config key `telemetry.{}` must be a mapping, "
                      "got {}",
                      sub, json::serialize(*v)));
    }
    for (const auto& [k, _] : v->get_object()) {
      if (!known.contains(std::string_view(k))) {
        unknown.push_back(fmt::format("telemetry.{}.{}", sub, std::string_view(k)));
      }
    }
  };
  const json::object& b = block->get_object();
  for (const auto& [k, _] : b) {
    if (!kKnownKeys.contains(std::string_view(k)) && !kRemovedKeys.contains(std::string_view(k))) {
      unknown.push_back(fmt::format("telemetry.{}", std::string_view(k)));
    }
  }
  check_sub(b, "memory_profiling", kMemoryKeys);
  check_sub(b, "prometheus", kPrometheusKeys);
  if (!unknown.empty()) {
    out.warnings.push_back(
        fmt::format("telemetry: ignoring unknown config keys: {}", fmt::join(unknown, ", ")));
  }
}

ExporterKind parse_exporter(std::string_view value, std::string_view source) {
  std::string v = lowercase(trimmed(value));
  if (v == "otlp") return ExporterKind::otlp;
  if (v == "console") return ExporterKind::console;
  throw ConfigError(
      fmt::format("config error: {}: unknown exporter '{}'; valid values: otlp, "
                  "console",
                  source, value));
}

double resolve_interval_seconds(const json::object& cfg, const GetEnv& getenv) {
  constexpr std::string_view kKey = "memory_profiling.interval_seconds";
  if (auto e = first_env(getenv, {"NEMO_GYM_OTEL_MEMORY_PROFILING_INTERVAL_SECONDS"})) {
    auto v = parse_number<double>(e->value);
    if (!v || !(*v > 0) || !std::isfinite(*v)) {
      throw ConfigError(
          fmt::format("config error: {}='{}' must be a number of seconds > 0", e->name, e->value));
    }
    return *v;
  }
  const double inf = std::numeric_limits<double>::infinity();
  double v = core::get_double(cfg, key_path(kKey), 1.0, -inf, inf);
  if (!(v > 0) || !std::isfinite(v)) {
    throw ConfigError(
        fmt::format("config error: config key `telemetry.{}` must be a number of "
                    "seconds > 0, got {}; set it with ++telemetry.{}=1.0",
                    kKey, v, kKey));
  }
  return v;
}

std::optional<int> resolve_port(const json::object& cfg, const GetEnv& getenv) {
  if (auto e = first_env(getenv, {"NEMO_GYM_OTEL_PROMETHEUS_PORT"})) {
    auto v = parse_number<int>(e->value);
    if (!v || *v < 1 || *v > 65535) {
      throw ConfigError(
          fmt::format("config error: {}='{}' must be a port number between 1 and "
                      "65535",
                      e->name, e->value));
    }
    return *v;
  }
  const json::value* v = core::find_path(cfg, key_path("prometheus.port"));
  if (!v || v->is_null()) return std::nullopt;
  return static_cast<int>(core::get_int(cfg, key_path("prometheus.port"), 9464, 1, 65535));
}

// Whether telemetry is on, which signals, and what names the process and its spans.
void resolve_signals(const json::object& cfg, const GetEnv& getenv, TelemetrySettings& s) {
  s.enabled =
      resolve_bool(cfg, getenv, "enabled", {"NEMO_GYM_OTEL_ENABLED", "NEMO_LENS_ENABLED"}, false);
  if (auto e = first_env(getenv, {"OTEL_SDK_DISABLED"})) {
    s.sdk_disabled = parse_bool(e->name, e->value);
  }
  if (auto name = resolve_string(cfg, getenv, "service_name", {"OTEL_SERVICE_NAME"})) {
    s.service_name = *name;
  }
  s.service_name_per_server = resolve_bool(cfg, getenv, "service_name_per_server",
                                           {"NEMO_GYM_OTEL_SERVICE_NAME_PER_SERVER"}, true);

  if (auto e = first_env(getenv, {"NEMO_GYM_OTEL_SPAN_GROUPS", "NEMO_LENS_SPAN_GROUPS"})) {
    s.span_groups = e->value;
    s.span_group_set = resolve_span_groups(e->value, e->name);
  } else {
    s.span_groups = core::get_string(cfg, key_path("span_groups"), "default");
    s.span_group_set = resolve_span_groups(s.span_groups, key_path("span_groups"));
  }

  if (auto e = first_env(getenv, {"NEMO_GYM_OTEL_EXPORTER", "NEMO_LENS_EXPORTER"})) {
    s.exporter = parse_exporter(e->value, e->name);
  } else if (auto y = yaml_string(cfg, "exporter")) {
    s.exporter = parse_exporter(*y, "config key `telemetry.exporter`");
  }

  s.traces_enabled =
      resolve_bool(cfg, getenv, "traces_enabled",
                   {"NEMO_GYM_OTEL_TRACES_ENABLED", "NEMO_LENS_TRACES_ENABLED"}, true);
  s.metrics_enabled =
      resolve_bool(cfg, getenv, "metrics_enabled",
                   {"NEMO_GYM_OTEL_METRICS_ENABLED", "NEMO_LENS_METRICS_ENABLED"}, true);
  s.logs_enabled = resolve_bool(cfg, getenv, "logs_enabled",
                                {"NEMO_GYM_OTEL_LOGS_ENABLED", "NEMO_LENS_LOGS_ENABLED"}, false);
  if (s.logs_enabled && s.active() && s.exporter == ExporterKind::console) {
    s.warnings.push_back(
        "telemetry: logs_enabled has no effect with the console exporter: the log records are "
        "already on the process's output");
  }
  s.run_id = resolve_string(cfg, getenv, "run_id", {"NEMO_GYM_OTEL_RUN_ID", "NEMO_LENS_RUN_ID"});
  if (auto e = first_env(getenv, {"NEMO_GYM_OTEL_USER_ID", "NEMO_LENS_USER_ID"})) {
    s.user_id = e->value;
  }
}

// Where the signals go: the exporter's keys, Prometheus, the console file; memory profiling.
void resolve_destinations(const json::object& cfg, const GetEnv& getenv, TelemetrySettings& s) {
  s.memory_profiling_enabled = resolve_bool(cfg, getenv, "memory_profiling.enabled",
                                            {"NEMO_GYM_OTEL_MEMORY_PROFILING_ENABLED"}, false);
  s.memory_profiling_interval_seconds = resolve_interval_seconds(cfg, getenv);

  s.otlp_endpoint = yaml_string(cfg, "otlp_endpoint");
  s.otlp_protocol = yaml_string(cfg, "otlp_protocol");
  s.otlp_headers = yaml_string(cfg, "otlp_headers");
  s.instrument_aiohttp =
      resolve_bool(cfg, getenv, "instrument_aiohttp", {"NEMO_GYM_OTEL_INSTRUMENT_AIOHTTP"}, true);
  s.prometheus_port = resolve_port(cfg, getenv);
  if (auto host =
          resolve_string(cfg, getenv, "prometheus.host", {"NEMO_GYM_OTEL_PROMETHEUS_HOST"})) {
    s.prometheus_host = *host;
  }
  s.console_path = resolve_string(cfg, getenv, "console_path", {"NEMO_GYM_OTEL_CONSOLE_PATH"});
}

// The export interval and timeout, the trace sampler and the span and log batches.
void resolve_export_timing(const GetEnv& getenv, TelemetrySettings& s) {
  if (auto e = first_env(getenv, {"OTEL_METRIC_EXPORT_INTERVAL"})) {
    s.export_interval = parse_positive_ms(*e);
  }
  s.export_timeout = std::min(std::chrono::milliseconds(30'000), s.export_interval);
  if (auto e = first_env(getenv, {"OTEL_METRIC_EXPORT_TIMEOUT"})) {
    s.export_timeout = parse_positive_ms(*e);
    if (s.export_timeout > s.export_interval) {
      throw ConfigError(
          fmt::format("config error: OTEL_METRIC_EXPORT_TIMEOUT={} must not exceed "
                      "the export interval ({} ms, OTEL_METRIC_EXPORT_INTERVAL)",
                      e->value, s.export_interval.count()));
    }
  }
  if (s.traces_active()) {
    s.sampler = resolve_sampler(getenv);
    s.span_batch = resolve_batch_settings(getenv, "OTEL_BSP", BatchSettings{});
  }
  if (s.logs_active()) {
    s.log_batch = resolve_batch_settings(getenv, "OTEL_BLRP",
                                         BatchSettings{2048, 512, std::chrono::milliseconds(1000)});
  }
}

}  // namespace

TelemetrySettings resolve_settings(const json::object& cfg, const GetEnv& getenv_in) {
  const GetEnv getenv = getenv_in ? getenv_in : process_env();
  TelemetrySettings s;
  check_block_shape(cfg, s);
  resolve_signals(cfg, getenv, s);
  resolve_destinations(cfg, getenv, s);
  resolve_export_timing(getenv, s);
  return s;
}

std::string generate_run_id() {
  std::random_device rd;
  std::uint64_t bits = (static_cast<std::uint64_t>(rd()) << 32) | rd();
  return fmt::format("{:012x}", bits & 0xffffffffffffULL);
}

std::string resolve_run_id(const TelemetrySettings& settings, const GetEnv& getenv_in,
                           const std::optional<std::string>& served_run_id) {
  const GetEnv getenv = getenv_in ? getenv_in : process_env();
  if (settings.run_id) return *settings.run_id;
  if (served_run_id && !trimmed(*served_run_id).empty()) return trimmed(*served_run_id);
  if (auto e = first_env(getenv, {"SLURM_JOB_ID"})) return e->value;
  return generate_run_id();
}

std::vector<std::pair<std::string, std::string>> child_environment(
    const TelemetrySettings& settings, const std::string& run_id) {
  if (!settings.active()) return {};
  return {{"NEMO_GYM_OTEL_RUN_ID", run_id}};
}

}  // namespace gym::telemetry
