#pragma once
// OtlpSender: the OTLP transport of one signal (metrics, traces or logs) in one process
// (docs/design/telemetry-contract.md#export-and-failure-isolation). An exporter encodes a batch
// into an Export request (Export<Signal>ServiceRequest) and hands the bytes to send(); the sender
// delivers them to the collector over the protocol of its settings, retries what retry.h retries,
// and counts and logs what it drops. Exporters built on it: OtlpMetricExporter
// (otlp_metric_exporter.h); the trace and log exporters are meant to be built the same way.
//
// Usage, for a signal's exporter:
//
//   OtlpSettings settings = resolve_otlp(telemetry_settings, getenv, Signal::traces);
//   OtlpSender sender(settings, Signal::traces, export_interval);
//   ...
//   ExportTraceServiceRequest request = ...;            // the batch
//   std::string payload = payload_encoding(settings.protocol) == PayloadEncoding::protobuf
//                             ? request.SerializeAsString()
//                             : /* OTLP/JSON text of the request */;
//   bool ok = sender.send(std::move(payload), spans_in_batch, deadline);
//   ...
//   sender.shutdown(deadline);
//
// The request messages are in the gym_otlp_proto target (proto/, linked by gym_exporters):
// "opentelemetry/proto/collector/{metrics,trace,logs}/v1/<signal>_service.pb.h", OTLP's field
// numbers. Over http/json an id field (trace_id, span_id, parent_span_id) is lowercase hex, not
// base64 as protobuf's own JSON printer writes bytes (OTLP/JSON's rule).
//
// Transports, chosen by settings.protocol:
// - http/protobuf, http/json: POST to settings.url (.../v1/<signal>) through a small HTTP client
//   of the sender's own (2 connections at most), with Content-Type application/x-protobuf or
//   application/json, User-Agent gym-cpp/<version>, the settings' headers, and with gzip
//   compression the payload gzipped here and Content-Encoding: gzip. http:// and https://
//   (system trust store; SSL_CERT_FILE / SSL_CERT_DIR for a private CA).
// - grpc: a unary call of /opentelemetry.proto.collector.<signal>.v1.<Service>/Export
//   (grpc_method()) on a channel to grpc_channel(settings) (host:port, TLS or plaintext), with
//   the headers as metadata (keys lowercased; one gRPC metadata cannot carry, which resolve_otlp
//   refuses, is left out with a warning), the primary user agent gym-cpp/<version>, the
//   export's remaining budget as the call deadline, and with gzip compression the call compressed
//   by gRPC (grpc-encoding: gzip) rather than the payload. TLS trusts the system roots, or with
//   SSL_CERT_FILE set, that file's certificates plus OpenSSL's default bundle (as the HTTP path
//   does). gRPC's own retries are off: the sender's are the only ones.
//
// Retries: HTTP 429/502/503/504, connection errors and timeouts; gRPC UNAVAILABLE,
// RESOURCE_EXHAUSTED and DEADLINE_EXCEEDED; each after the backoff of retry.h (1 s, 2 s, 4 s, ...
// +-20 %, or Retry-After seconds over HTTP; gRPC's RetryInfo is not read) while the retry fits the
// budget: the OTLP timeout counted from the first attempt, cut by send()'s deadline. Everything
// else is permanent: the batch is dropped at once, and so is a refused TLS handshake (untrusted
// certificate, wrong host), which no retry would change. An accepted response's partial_success is
// counted (items_rejected) and logged with its error_message.
//
// Failure isolation: all network I/O happens on the sender's own thread (an Asio event loop
// for HTTP, a gRPC completion queue for gRPC), never on the caller's, and never through the
// process's rollout connection pool. send() blocks its caller until the batch is accepted or
// dropped, at most until its deadline (plus a few ms of scheduling). Failures are counted in
// stats() and logged rate-limited (retry.h FailureLog: the first at once, then at most one summary
// per `log_interval`, naming the signal; drops held back are summarised at shutdown); nothing is
// ever thrown to the caller.
//
// Thread-safety: every member function may be called from any thread; send() from several
// threads at once runs their batches concurrently (an exporter that wants one export in flight,
// as the metrics reader does, calls it from one thread).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "exporters/otlp/otlp_settings.h"
#include "telemetry/metrics/metric_exporter.h"

namespace gym::exporters {

// How send()'s payload must be encoded for a protocol.
enum class PayloadEncoding {
  protobuf,  // grpc, http/protobuf: the serialized Export<Signal>ServiceRequest
  json,      // http/json: the OTLP/JSON text of that message
};
PayloadEncoding payload_encoding(OtlpProtocol protocol);

// The gRPC method of a signal's Export call, e.g.
// "/opentelemetry.proto.collector.trace.v1.TraceService/Export".
std::string_view grpc_method(Signal signal);

class OtlpSender {
 public:
  struct Stats {
    std::uint64_t batches_sent = 0;     // accepted by the collector (HTTP 2xx, gRPC OK)
    std::uint64_t batches_dropped = 0;  // given up on
    std::uint64_t items_dropped = 0;    // points, spans or log records of the dropped batches
    std::uint64_t retries = 0;          // attempts after the first
    std::uint64_t items_rejected = 0;   // partial_success: rejected_data_points/_spans/_log_records
  };

  // Starts the sender's thread; connects on the first send, not here. The settings are taken as
  // resolve_otlp() returns them (a gRPC endpoint it would refuse makes every send fail).
  // `log_interval`: at most one failure summary per this period (the signal's export interval).
  OtlpSender(OtlpSettings settings, Signal signal,
             std::chrono::milliseconds log_interval = std::chrono::seconds(10));
  ~OtlpSender();  // shutdown(now + 1 s) unless shut down already
  OtlpSender(const OtlpSender&) = delete;
  OtlpSender& operator=(const OtlpSender&) = delete;

  // Sends one batch: `payload` encoded as payload_encoding(settings.protocol) says, uncompressed
  // (the sender applies the settings' compression); `items` is its point, span or log-record
  // count, for the drop counts and log lines. True once the collector accepted it; false when it
  // was dropped (permanent error, retries exhausted, `deadline` reached, the sender shut down),
  // which is counted and logged here. Never throws.
  bool send(std::string payload, std::size_t items, telemetry::Deadline deadline) noexcept;

  // Counts and logs a batch of `items` the exporter gave up on before sending it (it could not be
  // encoded, say), as send() does a dropped one. Never throws.
  void dropped(std::size_t items, const std::string& error) noexcept;

  // Stops the thread: batches still in flight are abandoned (cancelled) by `deadline`, drops not
  // logged yet are logged, and later sends fail at once. Idempotent; never throws.
  void shutdown(telemetry::Deadline deadline) noexcept;

  Stats stats() const;
  const OtlpSettings& settings() const noexcept;
  Signal signal() const noexcept;

  class Transport;  // the HTTP or gRPC half (otlp_transport.h)
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gym::exporters
