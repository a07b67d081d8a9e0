#include "exporters/otlp/otlp_http_exporter.h"

#include <pthread.h>

#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include "exporters/otlp/gzip.h"
#include "exporters/otlp/otlp_encoding.h"
#include "exporters/otlp/retry.h"
#include "http/client.h"

namespace gym::exporters {
namespace asio = boost::asio;
using telemetry::ExportResult;

namespace {

std::size_t point_count(const telemetry::MetricsSnapshot& s) {
  std::size_t n = 0;
  for (const auto& m : s.metrics) {
    n += m.type() == telemetry::MetricType::histogram ? m.histogram_points().size()
                                                      : m.number_points().size();
  }
  return n;
}

struct SendResult {
  bool ok = false;
  std::string error;
};

}  // namespace

struct OtlpHttpExporter::Impl {
  Impl(OtlpSettings s, std::chrono::milliseconds log_interval)
      : settings(std::move(s)), failure_log(log_interval), work(asio::make_work_guard(io)) {
    http::PoolParams params;
    params.total_limit = 2;
    params.per_host_limit = 2;
    params.aggregate_total = 2;
    params.aggregate_per_host = 2;
    params.retry_budget_seconds = 0;  // retries are ours (D9), not the client's
    client.emplace(io.get_executor(), params);
    thread = std::thread([this] {
      pthread_setname_np(pthread_self(), "gym-otlp-http");
      io.run();
    });
  }

  asio::awaitable<SendResult> send(std::string body, Clock::time_point end) {
    for (int attempt = 1;; ++attempt) {
      const auto now = Clock::now();
      if (now >= end) co_return SendResult{false, "the OTLP timeout expired"};
      http::ClientRequest req;
      req.method = http::Method::post;
      req.url = settings.url;
      req.body = body;
      req.retry = false;
      req.timeout = std::chrono::ceil<std::chrono::milliseconds>(end - now);
      req.headers.push_back({"Content-Type", content_type(settings.protocol)});
      req.headers.push_back({"User-Agent", "gym-cpp/" GYM_VERSION});
      if (settings.compression == Compression::gzip) {
        req.headers.push_back({"Content-Encoding", "gzip"});
      }
      for (const auto& [k, v] : settings.headers) req.headers.push_back({k, v});

      std::optional<int> status;
      std::optional<std::chrono::milliseconds> retry_after;
      std::string error;
      try {
        http::ClientResponse res = co_await client->request(std::move(req));
        status = res.status;
        if (classify(status) == AttemptOutcome::success) {
          if (auto ps = parse_partial_success(res.body, settings.protocol)) {
            {
              std::lock_guard lock(mutex);
              stats.points_rejected += static_cast<std::uint64_t>(ps->rejected_data_points);
            }
            spdlog::warn("telemetry: the collector rejected {} data point(s): {}",
                         ps->rejected_data_points, ps->error_message);
          }
          co_return SendResult{true, {}};
        }
        retry_after = parse_retry_after(http::find_header(res.headers, "retry-after"));
        error = "HTTP " + std::to_string(res.status) + " from " + settings.url;
      } catch (const http::TlsError& e) {
        // An untrusted certificate or a wrong host fails every retry the same way: the batch is
        // dropped now instead of waiting out the OTLP timeout (not a "connection error" of D9).
        co_return SendResult{false, e.what()};
      } catch (const std::exception& e) {
        error = e.what();
      }
      if (classify(status) == AttemptOutcome::permanent) co_return SendResult{false, error};
      const auto delay = backoff(attempt, jitter(rng), retry_after);
      if (Clock::now() + delay >= end) {
        co_return SendResult{false, error + " (no time left to retry within the OTLP timeout)"};
      }
      {
        std::lock_guard lock(mutex);
        ++stats.retries;
      }
      asio::steady_timer timer(io, delay);
      co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
  }

  void failed(std::size_t points, const std::string& error) {
    std::optional<std::string> line;
    {
      std::lock_guard lock(mutex);
      ++stats.batches_dropped;
      stats.points_dropped += points;
      line = failure_log.dropped(points, error, Clock::now());
    }
    if (line) spdlog::warn("{}", *line);
  }

  void stop(telemetry::Deadline deadline) {
    if (stopped) return;
    stopped = true;
    std::optional<std::string> line;
    {
      std::lock_guard lock(mutex);
      line = failure_log.pending(Clock::now());
    }
    if (line) spdlog::warn("{}", *line);
    // The client is destroyed on its own loop, then the loop stops; an abandoned send is
    // destroyed with the io_context.
    std::promise<void> done;
    auto finished = done.get_future();
    asio::post(io, [this, &done] {
      client.reset();
      io.stop();
      done.set_value();
    });
    if (finished.wait_until(deadline) != std::future_status::ready) io.stop();
    work.reset();
    thread.join();
  }

  const OtlpSettings settings;
  mutable std::mutex mutex;  // stats, failure_log
  Stats stats;
  FailureLog failure_log;
  std::mt19937_64 rng{std::random_device{}()};  // loop thread only
  std::uniform_real_distribution<double> jitter{-1.0, 1.0};
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work;
  std::optional<http::HttpClient> client;  // loop thread only
  std::thread thread;
  bool stopped = false;
};

OtlpHttpExporter::OtlpHttpExporter(OtlpSettings settings, std::chrono::milliseconds log_interval)
    : impl_(std::make_unique<Impl>(std::move(settings), log_interval)) {}

OtlpHttpExporter::~OtlpHttpExporter() { impl_->stop(Clock::now() + std::chrono::seconds(1)); }

ExportResult OtlpHttpExporter::export_metrics(const telemetry::MetricsSnapshot& snapshot,
                                              telemetry::Deadline deadline) noexcept {
  Impl& s = *impl_;
  const std::size_t points = point_count(snapshot);
  if (s.stopped) {
    s.failed(points, "the exporter is shut down");
    return ExportResult::failure;
  }
  try {
    std::string body = encode_request(snapshot, s.settings.protocol);
    if (s.settings.compression == Compression::gzip) body = gzip(body);
    const auto end = std::min(deadline, Clock::now() + s.settings.timeout);
    auto result = asio::co_spawn(s.io, s.send(std::move(body), end), asio::use_future);
    // The send gives up by `end` itself; the margin covers the loop's scheduling.
    if (result.wait_until(std::min(deadline, end + std::chrono::milliseconds(200))) !=
        std::future_status::ready) {
      s.failed(points, "the export did not finish within its deadline");
      return ExportResult::failure;
    }
    SendResult r = result.get();
    if (r.ok) {
      std::lock_guard lock(s.mutex);
      ++s.stats.batches_sent;
      return ExportResult::success;
    }
    s.failed(points, r.error);
  } catch (const std::exception& e) {
    s.failed(points, e.what());
  }
  return ExportResult::failure;
}

void OtlpHttpExporter::shutdown(telemetry::Deadline deadline) noexcept {
  try {
    impl_->stop(deadline);
  } catch (...) {
  }
}

OtlpHttpExporter::Stats OtlpHttpExporter::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

}  // namespace gym::exporters
