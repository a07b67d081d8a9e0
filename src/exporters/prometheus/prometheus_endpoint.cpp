#include "exporters/prometheus/prometheus_endpoint.h"

#include <pthread.h>

#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_set>

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>

#include "exporters/prometheus/prometheus_text.h"
#include "http/server.h"

namespace gym::exporters {

namespace asio = boost::asio;

struct PrometheusEndpoint::Impl {
  const telemetry::MeterProvider& provider;
  asio::io_context io{1};
  std::unique_ptr<http::HttpServer> server;
  std::thread thread;
  std::once_flag stopped;
  std::unordered_set<std::string> reported;  // name clashes already logged; loop thread only

  explicit Impl(const telemetry::MeterProvider& p) : provider(p) {}

  http::Response scrape() {
    std::vector<std::string> conflicts;
    http::Response res;
    res.body = render_prometheus_text(provider.collect(), &conflicts);
    res.content_type = std::string(kPrometheusContentType);
    for (auto& name : conflicts) {
      if (reported.insert(name).second)
        spdlog::warn(
            "prometheus: metric '{}' is left out of /metrics: its Prometheus name "
            "clashes with another metric of a different type",
            name);
    }
    return res;
  }
};

PrometheusEndpoint::PrometheusEndpoint(const telemetry::MeterProvider& provider,
                                       PrometheusEndpointOptions options)
    : impl_(std::make_unique<Impl>(provider)) {
  http::Router router;
  Impl* impl = impl_.get();
  router.get("/metrics", [impl](http::Request&) -> asio::awaitable<http::Response> {
    co_return impl->scrape();
  });
  http::ServerOptions server_options;
  server_options.host = options.host;
  server_options.port = options.port;
  impl_->server = std::make_unique<http::HttpServer>(std::move(router), server_options);
  try {
    port_ = impl_->server->bind();
  } catch (const std::exception& e) {
    throw std::runtime_error("the Prometheus endpoint of " + options.role +
                             " cannot listen on port " + std::to_string(options.port) +
                             " (telemetry.prometheus.port / " +
                             "NEMO_GYM_OTEL_PROMETHEUS_PORT): " + e.what());
  }
  impl_->server->start(impl_->io);
  impl_->thread = std::thread([impl] {
    ::pthread_setname_np(::pthread_self(), "gym-prometheus");
    impl->io.run();
  });
}

PrometheusEndpoint::~PrometheusEndpoint() { stop(); }

void PrometheusEndpoint::stop() {
  std::call_once(impl_->stopped, [this] {
    impl_->server->stop();
    if (impl_->thread.joinable()) impl_->thread.join();
    impl_->server.reset();
  });
}

}  // namespace gym::exporters
