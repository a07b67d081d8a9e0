// OTLP/HTTP exporter settings (telemetry.md 7.2): variables, then the `telemetry:` block, then the
// defaults.
#include "exporters/otlp/otlp_settings.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include <fmt/format.h>
#include <boost/url/parse.hpp>

#include "core/config.h"

namespace gym::exporters {

using core::ConfigError;
using telemetry::EnvValue;
using telemetry::first_env;
using telemetry::parse_key_values;
using telemetry::parse_positive_ms;

namespace {

// An absolute http:// or https:// URL (the scheme in any case), parsed by Boost.URL.
bool is_http_url(std::string_view url) {
  auto u = boost::urls::parse_uri(url);
  if (!u || !u->has_authority()) return false;
  return u->scheme_id() == boost::urls::scheme::http ||
         u->scheme_id() == boost::urls::scheme::https;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view signal_name(Signal s) { return s == Signal::metrics ? "METRICS" : "TRACES"; }

}  // namespace

OtlpSettings resolve_otlp(const telemetry::TelemetrySettings& settings,
                          const telemetry::GetEnv& getenv_in, Signal signal) {
  const telemetry::GetEnv getenv = getenv_in ? getenv_in : telemetry::process_env();
  const std::string sig(signal_name(signal));
  auto var = [&](std::string_view what) {
    return fmt::format("OTEL_EXPORTER_OTLP_{}_{}", sig, what);
  };
  auto generic = [](std::string_view what) { return fmt::format("OTEL_EXPORTER_OTLP_{}", what); };
  OtlpSettings out;

  // Protocol.
  std::optional<EnvValue> protocol = first_env(getenv, {var("PROTOCOL"), generic("PROTOCOL")});
  if (!protocol && settings.otlp_protocol) {
    protocol = EnvValue{"config key `telemetry.otlp_protocol`", *settings.otlp_protocol};
  }
  if (protocol) {
    std::string p = lower(protocol->value);
    if (p == "http/protobuf") {
      out.protocol = OtlpProtocol::http_protobuf;
    } else if (p == "http/json") {
      out.protocol = OtlpProtocol::http_json;
    } else if (p == "grpc") {
      throw ConfigError(
          fmt::format("config error: {}=grpc: gRPC is not supported yet; use "
                      "http/protobuf (port 4318) or http/json",
                      protocol->name));
    } else {
      throw ConfigError(
          fmt::format("config error: {}: unsupported OTLP protocol '{}'; valid "
                      "values: http/protobuf, http/json",
                      protocol->name, protocol->value));
    }
  }

  // URL.
  std::string url_source;
  if (auto e = first_env(getenv, {var("ENDPOINT")})) {
    out.url = e->value;
    url_source = e->name;
  } else {
    std::string base = "http://localhost:4318";
    url_source = "the default endpoint";
    if (auto g = first_env(getenv, {generic("ENDPOINT")})) {
      base = g->value;
      url_source = g->name;
    } else if (settings.otlp_endpoint) {
      base = *settings.otlp_endpoint;
      url_source = "config key `telemetry.otlp_endpoint`";
    }
    while (!base.empty() && base.back() == '/') base.pop_back();
    out.url = base + (signal == Signal::metrics ? "/v1/metrics" : "/v1/traces");
  }
  if (!is_http_url(out.url)) {
    throw ConfigError(
        fmt::format("config error: {}: the OTLP endpoint '{}' must be an http:// or "
                    "https:// URL",
                    url_source, out.url));
  }

  // Headers.
  std::optional<EnvValue> headers = first_env(getenv, {var("HEADERS"), generic("HEADERS")});
  if (!headers && settings.otlp_headers) {
    headers = EnvValue{"config key `telemetry.otlp_headers`", *settings.otlp_headers};
  }
  if (headers) {
    auto parsed = parse_key_values(headers->value);
    if (!parsed) {
      // The value may hold secrets: name the source only.
      throw ConfigError(
          fmt::format("config error: {}: every entry must be key=value, separated "
                      "by commas",
                      headers->name));
    }
    out.headers = std::move(*parsed);
  }

  if (auto e = first_env(getenv, {var("TIMEOUT"), generic("TIMEOUT")}))
    out.timeout = parse_positive_ms(*e);

  if (auto e = first_env(getenv, {var("COMPRESSION"), generic("COMPRESSION")})) {
    std::string c = lower(e->value);
    if (c == "gzip") {
      out.compression = Compression::gzip;
    } else if (c == "none") {
      out.compression = Compression::none;
    } else {
      throw ConfigError(
          fmt::format("config error: {}='{}': valid values are gzip and none", e->name, e->value));
    }
  }
  return out;
}

}  // namespace gym::exporters
