#pragma once
// The OTLP exporter settings of one signal (docs/reference/telemetry.md#every-key-and-variable):
// OTEL_EXPORTER_OTLP_<SIGNAL>_* over OTEL_EXPORTER_OTLP_* over the `telemetry:` block's otlp_*
// keys over the defaults. Every invalid value is a core::ConfigError whose message names the
// variable or the key; nothing silently falls back to a default. A process checks them at startup
// through check_exporter_settings() (metrics_pipeline.h).
//
// Protocols: grpc (the default, as upstream's SDK: endpoint http://localhost:4317),
// http/protobuf and http/json (default endpoint http://localhost:4318, paths /v1/<signal>).
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "telemetry/config.h"

namespace gym::exporters {

enum class OtlpProtocol { grpc, http_protobuf, http_json };
enum class Compression { none, gzip };
enum class Signal { metrics, traces, logs };

// "metrics", "traces", "logs": the word of log lines and of /v1/<signal>.
std::string_view signal_name(Signal signal);
// "grpc", "http/protobuf", "http/json": the spelling of OTEL_EXPORTER_OTLP_PROTOCOL.
std::string_view protocol_name(OtlpProtocol protocol);

struct OtlpSettings {
  OtlpProtocol protocol = OtlpProtocol::grpc;
  // http/*: the URL every export is POSTed to, e.g. http://localhost:4318/v1/metrics.
  // grpc: the endpoint the channel connects to: http://host:port, https://host:port or host:port
  // (grpc_channel() below tells target and security).
  std::string url = "http://localhost:4317";
  std::vector<std::pair<std::string, std::string>> headers;  // HTTP headers; gRPC metadata
  std::chrono::milliseconds timeout{10'000};
  Compression compression = Compression::none;
  // grpc only: OTEL_EXPORTER_OTLP_<SIGNAL>_INSECURE / OTEL_EXPORTER_OTLP_INSECURE, when set.
  std::optional<bool> insecure;
  // PEM files for a TLS connection (empty: not set), from
  // OTEL_EXPORTER_OTLP_[<SIGNAL>_]CERTIFICATE, _CLIENT_CERTIFICATE and _CLIENT_KEY: the CAs trusted
  // instead of the system's, and this process's certificate and key for a collector that asks for
  // one (mutual TLS).
  std::string certificate;
  std::string client_certificate;
  std::string client_key;
};

// The gRPC channel an endpoint means (grpc only).
struct GrpcChannel {
  std::string target;  // host:port, e.g. localhost:4317 or [::1]:4317
  bool tls = false;
};

// The target is the endpoint's host and port (a missing port is 80 for http://, 443 for
// https:// and for host:port without a scheme). Security, as upstream's Python SDK decides it:
// https:// is always TLS; otherwise INSECURE decides when set (false: TLS, true: plaintext);
// otherwise http:// is plaintext and an endpoint without a scheme is TLS (INSECURE's default is
// false, OpenTelemetry specification). A path, query or fragment other than "/" is a ConfigError
// naming `source` (a gRPC endpoint has no path: /v1/metrics belongs to the HTTP protocols), and so
// is an endpoint that is no http(s) URL nor host:port.
GrpcChannel grpc_channel(std::string_view endpoint, std::optional<bool> insecure,
                         std::string_view source = "the OTLP endpoint");
inline GrpcChannel grpc_channel(const OtlpSettings& s) { return grpc_channel(s.url, s.insecure); }

// Why gRPC metadata cannot carry the header `key`=`value` (empty when it can): gRPC's rules for
// keys (lowercase letters, digits, '-', '_', '.', after lowercasing: HTTP header names are
// case-insensitive, and the gRPC sender lowercases them; not reserved "grpc-*") and for the values
// of keys not ending in -bin (printable ASCII). The message names the key, never the value.
std::string grpc_metadata_problem(std::string_view key, std::string_view value);

// The settings of `signal`: the signal-specific OTEL_EXPORTER_OTLP_<SIGNAL>_* variable, then
// OTEL_EXPORTER_OTLP_*, then telemetry.otlp_* (protocol, endpoint, headers), then the default.
// The default endpoint follows the protocol: http://localhost:4317 for grpc (the channel target),
// http://localhost:4318 for http/* (+ /v1/<signal>; the per-signal endpoint is used verbatim).
// ConfigErrors: an unknown protocol (the message lists the three valid values), a URL that is not
// http(s) (for grpc also host:port) or a grpc endpoint with a path, a header entry that is not
// key=value (for grpc also a key or value gRPC metadata cannot carry), a non-positive timeout, an
// unknown compression, an INSECURE value that is not a boolean spelling, a CERTIFICATE,
// CLIENT_CERTIFICATE or CLIENT_KEY file that cannot be loaded, a client certificate without its key
// or a key without its certificate.
OtlpSettings resolve_otlp(const telemetry::TelemetrySettings& settings,
                          const telemetry::GetEnv& getenv, Signal signal = Signal::metrics);

}  // namespace gym::exporters
