#pragma once
// Test support: the OTLP receiver of the integration tests (an external judge: the OpenTelemetry
// project's own decoder), over OTLP/HTTP (tests/integration/otlp_decode/receiver.js) or OTLP/gRPC
// (tests/integration/otlp_decode/grpc_receiver.js, served by @grpc/grpc-js@1.14.7). Both run on
// Node.js and decode every export, of any signal, with the OpenTelemetry JavaScript project's
// generated protobuf root (@opentelemetry/otlp-transformer@0.214.0); the npm packages are installed
// under the build dir on first use. A reader thread collects every request the receiver answered;
// the accessors are thread-safe. Below the class: queries over the decoded exports.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "process.h"

namespace gym::test {

// One request the receiver answered: its HEADERS line, then its DECODED or ERROR line.
struct OtlpRequest {
  // {"connection": n-th connection, "path", "user-agent", "x-gym-test"}; gRPC adds "grpc-status",
  // the status code the call was answered with. Header (metadata) values are null when absent.
  // With Tls::client_ca also "x-client-cert-cn": the CN of the client's certificate (null: none).
  boost::json::object headers;
  // application/x-protobuf, application/json or application/grpc (decoded only); "control" for
  // the gRPC receiver's sync requests.
  std::string content_type;
  std::string encoding;        // gzip or identity (decoded only)
  boost::json::value decoded;  // the Export<Signal>ServiceRequest; null when it failed to decode
  std::string error;           // the receiver's ERROR message, when it failed

  std::string path() const;  // headers["path"]: /v1/metrics, or the gRPC method; "" when absent
};

// Attribute values as plain JSON: strings, int64 (from intValue strings), doubles, bools, arrays of
// them.
using Attributes = std::map<std::string, boost::json::value>;

// One process's data in one request: a ResourceMetrics.
struct ProcessExport {
  Attributes resource;
  std::string scope_name, scope_version;     // of its first scopeMetrics
  std::vector<boost::json::object> metrics;  // of every scopeMetrics, in order

  std::string instance_id() const;  // service.instance.id; "" when absent
  std::string string_attribute(const std::string& key) const;      // "" when absent
  const boost::json::object* metric(std::string_view name) const;  // null when absent
  std::set<std::string> metric_names() const;
};

class OtlpReceiver {
 public:
  struct Tls {
    std::string key, cert;  // PEM files: the receiver speaks https (or gRPC over TLS) with them
    // PEM file; when set, mutual TLS: every client must present a certificate this CA signed, or
    // its handshake fails (HANDSHAKE_FAILED in output()). `{}`: Tls{key, cert} stays warning-free.
    std::string client_ca{};
  };
  enum class Transport { http, grpc };
  struct Options {
    Transport transport = Transport::http;
    std::optional<Tls> tls;
    // gRPC only: the first `fail_calls` Export calls (-1: all) are decoded, then answered with the
    // gRPC status `fail_code` (14: UNAVAILABLE).
    int fail_calls = 0;
    int fail_code = 14;
    // gRPC only: every accepted call is answered with this partial_success.
    std::optional<std::pair<std::int64_t, std::string>> partial_success;
    // gRPC only: every Export call is decoded and never answered (a hung collector).
    bool hang = false;
  };

  // Starts the receiver and waits until it listens. Never throws: what went wrong (no Node.js, the
  // npm install failed, the receiver died) is in error(). Tests must fail on it, never skip.
  explicit OtlpReceiver(std::optional<Tls> tls = std::nullopt);
  explicit OtlpReceiver(Options options);
  ~OtlpReceiver();  // stop()
  OtlpReceiver(const OtlpReceiver&) = delete;
  OtlpReceiver& operator=(const OtlpReceiver&) = delete;

  // Empty when the receiver listens.
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  // For OTEL_EXPORTER_OTLP_ENDPOINT with protocol(): http://127.0.0.1:<port>, or with TLS
  // https://127.0.0.1:<port> (the test certificates name 127.0.0.1 and localhost). The same base
  // for either transport: an HTTP exporter appends /v1/<signal>, a gRPC one connects to it.
  std::string endpoint() const;
  // The OTEL_EXPORTER_OTLP_PROTOCOL that reaches this receiver: http/protobuf (the HTTP receiver
  // also reads http/json) or grpc.
  std::string protocol() const;
  bool grpc() const { return options_.transport == Transport::grpc; }

  std::vector<OtlpRequest> requests() const;  // every answered request, in arrival order
  std::size_t size() const;
  // Waits until `n` requests were answered; false when `limit` passes first.
  bool wait_for(std::size_t n, std::chrono::milliseconds limit) const;
  // The first answered request (from the start, then as they come) for which `match` holds; nullopt
  // when `limit` passes first or the receiver exited.
  std::optional<OtlpRequest> wait_for_request(const std::function<bool(const OtlpRequest&)>& match,
                                              std::chrono::milliseconds limit) const;
  // The same for one process's data in a request (ProcessExport). Exports are cumulative, so "some
  // export shows X" is the condition to wait on.
  std::optional<ProcessExport> wait_for_export(
      const std::function<bool(const ProcessExport&)>& match,
      std::chrono::milliseconds limit) const;
  // Sends an empty export of its own (gRPC: a request to the receiver's control port) and waits
  // until it is read back: every request answered before this call is then in requests(). Use it
  // after the exporting processes exited.
  bool sync(std::chrono::milliseconds limit = std::chrono::seconds(30));

  std::string output() const;  // every line the receiver printed (stdout and stderr)
  // SIGTERM, then SIGKILL after 5 s; joins the reader. Idempotent.
  void stop();

  // The node_modules dir holding the decoder, installed on first use (an exclusive file lock keeps
  // concurrent test binaries from installing at once). Empty, with *why set, on failure.
  static std::string node_modules(std::string* why);
  // The same for @grpc/grpc-js (its own folder).
  static std::string grpc_node_modules(std::string* why);

 private:
  void read_lines();
  void take(const std::string& line);

  Options options_;
  std::string error_;
  int port_ = -1;
  int control_port_ = -1;                // gRPC: the plain HTTP port of sync()
  std::unique_ptr<ChildProcess> child_;  // touched by the reader thread only, once it runs
  std::thread reader_;
  std::uint64_t syncs_ = 0;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  // Shared so that waiting callers look at them without holding the lock or copying them.
  std::vector<std::shared_ptr<const OtlpRequest>> requests_;
  std::optional<boost::json::object> pending_headers_;
  std::string output_;
  bool reader_done_ = false;
  bool stopped_ = false;
};

// ---- Queries over decoded exports ---------------------------------------------------------------

// An OTLP AnyValue object as a plain JSON value.
boost::json::value plain_value(const boost::json::value& any_value);
// An OTLP KeyValue list (absent or null: none).
Attributes attribute_map(const boost::json::value& key_values);

// The requests that carry exports (the ones sync() made left out).
std::vector<OtlpRequest> exports_only(const std::vector<OtlpRequest>& requests);

// Every ResourceMetrics of one request, in order (none when it failed to decode).
std::vector<ProcessExport> process_exports(const OtlpRequest& request);
// Every ResourceMetrics of `requests`, in arrival order (requests that failed to decode skipped).
std::vector<ProcessExport> process_exports(const std::vector<OtlpRequest>& requests);
// The same grouped by service.instance.id, each group in arrival order.
std::map<std::string, std::vector<ProcessExport>> exports_by_instance(
    const std::vector<OtlpRequest>& requests);

// "sum", "gauge", "histogram" (or "" for anything else).
std::string metric_kind(const boost::json::object& metric);
// The metric's data points whose attributes include every pair of `filter`.
std::vector<const boost::json::object*> points(const boost::json::object& metric,
                                               const Attributes& filter = {});
// A number point's value (asInt or asDouble), as a double.
double point_value(const boost::json::object& point);
// A histogram point's count.
std::uint64_t point_count(const boost::json::object& point);
// Σ point_value, or Σ point_count for a histogram, over the points matching `filter`; 0 when the
// metric is null.
double total(const boost::json::object* metric, const Attributes& filter = {});

}  // namespace gym::test
