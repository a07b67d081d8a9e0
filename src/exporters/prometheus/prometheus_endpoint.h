#pragma once
// The opt-in Prometheus pull endpoint (docs/reference/telemetry.md#scrape-it-with-prometheus): `GET
// /metrics` in text format 0.0.4 on its own event loop and thread. Every scrape collects the
// provider (observable callbacks run then) and renders outside any lock; values are the cumulative
// values the OTLP stream carries.
//
// Threading: the constructor binds and starts the thread; stop() may be called from any thread
// and is idempotent. Scrapes run on the endpoint's thread; MeterProvider::collect() serialises
// them with the periodic reader's collections. The provider must outlive the endpoint.
#include <cstdint>
#include <memory>
#include <string>

#include "telemetry/metrics/meter_provider.h"

namespace gym::exporters {

struct PrometheusEndpointOptions {
  std::string host = "127.0.0.1";  // telemetry.prometheus.host
  std::uint16_t port = 0;          // telemetry.prometheus.port; 0: the OS chooses (tests)
  std::string role;                // the process role, for the bind error (e.g. "orchestrator")
};

class PrometheusEndpoint {
 public:
  // Binds now. A bind failure throws std::runtime_error naming the port and the process role
  // (a startup error, exit code 2).
  PrometheusEndpoint(const telemetry::MeterProvider& provider, PrometheusEndpointOptions options);
  ~PrometheusEndpoint();  // stop()
  PrometheusEndpoint(const PrometheusEndpoint&) = delete;
  PrometheusEndpoint& operator=(const PrometheusEndpoint&) = delete;

  std::uint16_t port() const noexcept { return port_; }  // the bound port

  // Stops accepting, lets a scrape in progress finish (0.5 s grace), joins the thread.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::uint16_t port_ = 0;
};

}  // namespace gym::exporters
