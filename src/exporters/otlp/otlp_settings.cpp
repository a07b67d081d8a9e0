// OTLP exporter settings (docs/reference/telemetry.md#every-key-and-variable): variables, then the
// `telemetry:` block, then the defaults, which depend on the protocol (gRPC on 4317 by default, as
// upstream; OTLP/HTTP on 4318).
#include "exporters/otlp/otlp_settings.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include <fmt/format.h>
#include <boost/url/parse.hpp>

#include "core/config.h"
#include "http/client_connection.h"

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

// A ConfigError naming `source` when the TLS context of `files` cannot be made.
void check_tls_files(const std::string& source, const http::TlsFiles& files) {
  try {
    http::make_tls_context(files);
  } catch (const http::TlsError& e) {
    throw ConfigError(fmt::format("config error: {}: {}", source, e.what()));
  }
}

std::string upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

}  // namespace

std::string_view signal_name(Signal s) {
  switch (s) {
    case Signal::metrics:
      return "metrics";
    case Signal::traces:
      return "traces";
    case Signal::logs:
      return "logs";
  }
  return "metrics";
}

std::string_view protocol_name(OtlpProtocol p) {
  switch (p) {
    case OtlpProtocol::grpc:
      return "grpc";
    case OtlpProtocol::http_protobuf:
      return "http/protobuf";
    case OtlpProtocol::http_json:
      return "http/json";
  }
  return "grpc";
}

// gRPC aborts a call whose metadata breaks its rules, so resolve_otlp checks them at startup and
// the sender again before it sends (for settings made by hand).
std::string grpc_metadata_problem(std::string_view key, std::string_view value) {
  const std::string k = telemetry::lowercase(key);
  for (unsigned char c : k) {
    if (!(std::isdigit(c) || (c >= 'a' && c <= 'z') || c == '-' || c == '_' || c == '.')) {
      return fmt::format("the header name '{}' has a character gRPC metadata keys cannot carry",
                         key);
    }
  }
  if (k.rfind("grpc-", 0) == 0) {
    return fmt::format("the header name '{}' is reserved by gRPC", key);
  }
  const bool binary = k.size() > 4 && k.compare(k.size() - 4, 4, "-bin") == 0;
  if (!binary) {
    for (unsigned char c : value) {
      if (c < 0x20 || c > 0x7e) {
        return fmt::format("the value of header '{}' is not printable ASCII (gRPC metadata)", key);
      }
    }
  }
  return {};
}

GrpcChannel grpc_channel(std::string_view endpoint, std::optional<bool> insecure,
                         std::string_view source) {
  auto bad = [&](std::string_view why) {
    return ConfigError(
        fmt::format("config error: {}: the OTLP gRPC endpoint '{}' {}", source, endpoint, why));
  };
  GrpcChannel out;
  std::string host;
  std::string port;
  bool scheme_https = false;
  bool scheme_http = false;
  if (endpoint.find("://") == std::string_view::npos) {
    // host:port (upstream's SDKs accept a gRPC endpoint without a scheme).
    auto a = boost::urls::parse_authority(endpoint);
    if (!a || a->host().empty() || a->has_userinfo()) {
      throw bad("must be an http:// or https:// URL, or host:port");
    }
    host = std::string(a->encoded_host());
    port = std::string(a->port());
  } else {
    auto u = boost::urls::parse_uri(endpoint);
    if (!u || !u->has_authority() || u->encoded_host().empty() ||
        (u->scheme_id() != boost::urls::scheme::http &&
         u->scheme_id() != boost::urls::scheme::https)) {
      throw bad("must be an http:// or https:// URL, or host:port");
    }
    if ((!u->encoded_path().empty() && u->encoded_path() != "/") || u->has_query() ||
        u->has_fragment()) {
      throw bad(
          "has a path: a gRPC endpoint is scheme://host:port only (the /v1/<signal> paths belong "
          "to http/protobuf and http/json, whose default port is 4318)");
    }
    scheme_https = u->scheme_id() == boost::urls::scheme::https;
    scheme_http = !scheme_https;
    host = std::string(u->encoded_host());
    port = std::string(u->port());
  }
  if (port.empty()) port = scheme_http ? "80" : "443";
  out.target = host + ":" + port;
  if (scheme_https) {
    out.tls = true;
  } else if (insecure) {
    out.tls = !*insecure;
  } else {
    out.tls = !scheme_http;
  }
  return out;
}

namespace {

// The OTEL_EXPORTER_OTLP_* variables for one signal: its own (..._TRACES_ENDPOINT) before the
// generic one (..._ENDPOINT).
struct OtlpVariables {
  const telemetry::GetEnv& getenv;
  std::string signal;  // TRACES, METRICS, LOGS

  std::string own(std::string_view what) const {
    return fmt::format("OTEL_EXPORTER_OTLP_{}_{}", signal, what);
  }
  static std::string generic(std::string_view what) {
    return fmt::format("OTEL_EXPORTER_OTLP_{}", what);
  }
  std::optional<EnvValue> either(std::string_view what) const {
    return first_env(getenv, {own(what), generic(what)});
  }
};

OtlpProtocol resolve_protocol(const OtlpVariables& vars,
                              const telemetry::TelemetrySettings& settings) {
  std::optional<EnvValue> protocol = vars.either("PROTOCOL");
  if (!protocol && settings.otlp_protocol)
    protocol = EnvValue{"config key `telemetry.otlp_protocol`", *settings.otlp_protocol};
  if (!protocol) return OtlpProtocol::grpc;
  const std::string p = telemetry::lowercase(protocol->value);
  if (p == "grpc") return OtlpProtocol::grpc;
  if (p == "http/protobuf") return OtlpProtocol::http_protobuf;
  if (p == "http/json") return OtlpProtocol::http_json;
  throw ConfigError(
      fmt::format("config error: {}: unsupported OTLP protocol '{}'; valid "
                  "values: grpc, http/protobuf, http/json",
                  protocol->name, protocol->value));
}

// TLS files, loaded here as the HTTP exporter loads them, so a file that would fail every export
// (missing, not PEM, a key that is not the certificate's) stops the process at startup.
void resolve_tls_files(const OtlpVariables& vars, OtlpSettings& out) {
  if (auto e = vars.either("CERTIFICATE")) {
    check_tls_files(e->name, {e->value, {}, {}});
    out.certificate = e->value;
  }
  auto client_cert = vars.either("CLIENT_CERTIFICATE");
  auto client_key = vars.either("CLIENT_KEY");
  if (client_cert.has_value() != client_key.has_value()) {
    const EnvValue& given = client_cert ? *client_cert : *client_key;
    const std::string missing = client_cert ? "CLIENT_KEY" : "CLIENT_CERTIFICATE";
    throw ConfigError(fmt::format(
        "config error: {} is set but {} (or {}) is not: a client certificate and its key go "
        "together",
        given.name, OtlpVariables::generic(missing), vars.own(missing)));
  }
  if (client_cert) {
    check_tls_files(client_cert->name + " and " + client_key->name,
                    {{}, client_cert->value, client_key->value});
    out.client_certificate = client_cert->value;
    out.client_key = client_key->value;
  }
}

// The URL of http/*, the channel endpoint of grpc: the signal's own variable as it is, else the
// generic one, the config key or the default with /v1/<signal> appended for http/*.
void resolve_endpoint(const OtlpVariables& vars, const telemetry::TelemetrySettings& settings,
                      Signal signal, OtlpSettings& out) {
  const bool grpc = out.protocol == OtlpProtocol::grpc;
  std::string url_source;
  if (auto e = first_env(vars.getenv, {vars.own("ENDPOINT")})) {
    out.url = e->value;
    url_source = e->name;
  } else {
    std::string base = grpc ? "http://localhost:4317" : "http://localhost:4318";
    url_source = "the default endpoint";
    if (auto g = first_env(vars.getenv, {OtlpVariables::generic("ENDPOINT")})) {
      base = g->value;
      url_source = g->name;
    } else if (settings.otlp_endpoint) {
      base = *settings.otlp_endpoint;
      url_source = "config key `telemetry.otlp_endpoint`";
    }
    if (grpc) {
      out.url = base;
    } else {
      while (!base.empty() && base.back() == '/') base.pop_back();
      out.url = fmt::format("{}/v1/{}", base, signal_name(signal));
    }
  }
  if (grpc) {
    grpc_channel(out.url, out.insecure, url_source);  // throws for a bad endpoint
  } else if (!is_http_url(out.url)) {
    throw ConfigError(
        fmt::format("config error: {}: the OTLP endpoint '{}' must be an http:// or "
                    "https:// URL",
                    url_source, out.url));
  }
}

void resolve_headers(const OtlpVariables& vars, const telemetry::TelemetrySettings& settings,
                     OtlpSettings& out) {
  std::optional<EnvValue> headers = vars.either("HEADERS");
  if (!headers && settings.otlp_headers)
    headers = EnvValue{"config key `telemetry.otlp_headers`", *settings.otlp_headers};
  if (!headers) return;
  auto parsed = parse_key_values(headers->value);
  if (!parsed) {
    // The value may hold secrets: name the source only.
    throw ConfigError(
        fmt::format("config error: {}: every entry must be key=value, separated "
                    "by commas",
                    headers->name));
  }
  if (out.protocol == OtlpProtocol::grpc) {
    for (const auto& [k, v] : *parsed) {
      if (auto why = grpc_metadata_problem(k, v); !why.empty())
        throw ConfigError(fmt::format("config error: {}: {}", headers->name, why));
    }
  }
  out.headers = std::move(*parsed);
}

}  // namespace

OtlpSettings resolve_otlp(const telemetry::TelemetrySettings& settings,
                          const telemetry::GetEnv& getenv_in, Signal signal) {
  const telemetry::GetEnv getenv = getenv_in ? getenv_in : telemetry::process_env();
  const OtlpVariables vars{getenv, upper(signal_name(signal))};
  OtlpSettings out;
  out.protocol = resolve_protocol(vars, settings);
  // Insecure (gRPC only, but a bad spelling is an error whatever the protocol).
  if (auto e = vars.either("INSECURE")) out.insecure = telemetry::parse_bool(e->name, e->value);
  resolve_tls_files(vars, out);
  resolve_endpoint(vars, settings, signal, out);
  resolve_headers(vars, settings, out);
  if (auto e = vars.either("TIMEOUT")) out.timeout = parse_positive_ms(*e);
  if (auto e = vars.either("COMPRESSION")) {
    const std::string c = telemetry::lowercase(e->value);
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
