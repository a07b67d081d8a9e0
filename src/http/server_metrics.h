#pragma once
// The HTTP server's metrics (docs/design/telemetry-contract.md#metrics) as server.cpp records them:
// the series of one loop, bound once, and the measurement of one request. Internal to server.cpp
// (hence the Beast type); inline, since they run on every request. Loop thread only.
#include "telemetry/metrics/gym_metrics.h"

#include <boost/beast/http/message.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gym::http {

// The bound series of one loop's server metrics. A server sees few attribute sets: its routes x
// methods x statuses, and the one or two Host values its clients send. Each is bound the first time
// and found again by pointer and short string compares instead of the SDK's sort-and-hash lookup.
class ServerSeries {
 public:
  explicit ServerSeries(const telemetry::GymMetrics& metrics) : metrics_(metrics) {}

  // `route` points into the router (or is empty); `method` is a static label.
  telemetry::BoundHistogram duration(std::string_view route, std::string_view method, int status) {
    const DurationKey key{route.data(), route.size(), method.data(), status};
    if (auto it = durations_.find(key); it != durations_.end()) return it->second;
    auto series = metrics_.http_request_series(route, method, status);
    if (durations_.size() < kMaxCached) durations_.emplace(key, series);
    return series;
  }

  telemetry::BoundUpDownCounter<std::int64_t> active(std::string_view host,
                                                     std::string_view method) {
    for (const auto& a : actives_)
      if (a.method == method.data() && a.host == host) return a.series;
    auto series = metrics_.active_request_series(host, method);
    // Past a few hosts (a client inventing Host values) the SDK's own lookup takes over.
    if (actives_.size() < kMaxCachedHosts)
      actives_.push_back({std::string(host), method.data(), series});
    return series;
  }

 private:
  static constexpr std::size_t kMaxCached = 1024;
  static constexpr std::size_t kMaxCachedHosts = 16;
  struct DurationKey {
    const char* route;
    std::size_t route_size;
    const char* method;
    int status;
    bool operator==(const DurationKey&) const = default;
  };
  struct DurationKeyHash {
    std::size_t operator()(const DurationKey& k) const noexcept {
      auto h = std::hash<const void*>()(k.route) ^ (std::hash<const void*>()(k.method) << 1);
      return h ^ (static_cast<std::size_t>(k.status) << 3) ^ k.route_size;
    }
  };
  struct Active {
    std::string host;
    const char* method;
    telemetry::BoundUpDownCounter<std::int64_t> series;
  };

  const telemetry::GymMetrics& metrics_;
  std::unordered_map<DurationKey, telemetry::BoundHistogram, DurationKeyHash> durations_;
  std::vector<Active> actives_;
};

// The server metrics of one request: in flight from its head to the end of its response or of
// its connection, and one duration sample when a response was written.
class RequestMetrics {
 public:
  using Clock = std::chrono::steady_clock;

  // `series` null: not measured (the head server, telemetry off).
  RequestMetrics(ServerSeries* series, const boost::beast::http::request_header<>& head)
      : series_(series) {
    if (!series_) return;
    start_ = Clock::now();
    method_ = telemetry::http_method_label(head.method_string());
    try {
      active_ = series_->active(std::string_view(head[boost::beast::http::field::host]), method_);
    } catch (...) {  // out of memory: this request goes unmeasured, never unserved
      series_ = nullptr;
      return;
    }
    active_.add(1);
  }
  ~RequestMetrics() { active_.add(-1); }
  RequestMetrics(const RequestMetrics&) = delete;
  RequestMetrics& operator=(const RequestMetrics&) = delete;

  // The last byte of a response with `status` went to the socket.
  void responded(std::string_view route, int status) const {
    if (!series_) return;
    try {
      series_->duration(route, method_, status)
          .record(std::chrono::duration<double>(Clock::now() - start_).count());
    } catch (...) {
    }
  }

 private:
  ServerSeries* series_;
  Clock::time_point start_;
  std::string_view method_;                             // a static label
  telemetry::BoundUpDownCounter<std::int64_t> active_;  // empty when not measured
};

}  // namespace gym::http
