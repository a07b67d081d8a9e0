// OtlpSender (otlp_sender.h): the counting, logging and waiting shared by both transports, then
// the OTLP/HTTP transport (an Asio loop with its own HttpClient); the OTLP/gRPC transport is in
// otlp_grpc_transport.cpp.
#include "exporters/otlp/otlp_sender.h"
#include "exporters/otlp/otlp_transport.h"

#include "telemetry/common/shutdown_report.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "exporters/otlp/gzip.h"
#include "exporters/otlp/otlp_encoding.h"
#include "exporters/otlp/retry.h"
#include "http/client.h"

namespace gym::exporters {
namespace asio = boost::asio;

PayloadEncoding payload_encoding(OtlpProtocol protocol) {
  return protocol == OtlpProtocol::http_json ? PayloadEncoding::json : PayloadEncoding::protobuf;
}

std::string_view grpc_method(Signal signal) {
  switch (signal) {
    case Signal::metrics:
      return "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";
    case Signal::traces:
      return "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
    case Signal::logs:
      return "/opentelemetry.proto.collector.logs.v1.LogsService/Export";
  }
  return "";
}

void OtlpSender::Impl::failed(std::size_t items, const std::string& error) {
  std::optional<std::string> line;
  {
    std::lock_guard lock(mutex);
    ++stats.batches_dropped;
    stats.items_dropped += items;
    line = failure_log.dropped(items, error, Clock::now());
  }
  if (line) telemetry::shutdown_report::warn_or_hold(std::move(*line));
}

void OtlpSender::Impl::accepted(std::string_view body) {
  const OtlpProtocol encoding = settings.protocol == OtlpProtocol::http_json
                                    ? OtlpProtocol::http_json
                                    : OtlpProtocol::http_protobuf;
  auto ps = parse_partial_success(body, encoding, signal);
  if (!ps) return;
  {
    std::lock_guard lock(mutex);
    stats.items_rejected += static_cast<std::uint64_t>(std::max<std::int64_t>(ps->rejected, 0));
  }
  spdlog::warn("telemetry: the collector rejected {} {}{}(s) of a {} export{}{}", ps->rejected,
               signal == Signal::metrics ? "data " : "", item_noun(signal), signal_name(signal),
               ps->error_message.empty() ? "" : ": ", ps->error_message);
}

namespace {

// ---- OTLP/HTTP ----------------------------------------------------------------------------------

class HttpTransport final : public OtlpSender::Transport {
 public:
  explicit HttpTransport(OtlpSender::Impl& owner)
      : owner_(owner), work_(asio::make_work_guard(io_)) {
    http::PoolParams params;
    params.total_limit = 2;
    params.per_host_limit = 2;
    params.aggregate_total = 2;
    params.aggregate_per_host = 2;
    params.retry_budget_seconds = 0;  // retries are the sender's, not the client's
    const OtlpSettings& s = owner.settings;
    params.tls = {s.certificate, s.client_certificate, s.client_key};
    client_.emplace(io_.get_executor(), params);
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "gym-otlp-http");
      io_.run();
    });
  }
  ~HttpTransport() override { stop(Clock::now() + std::chrono::seconds(1)); }

  void start(std::string payload, Clock::time_point end, Outcome outcome) override {
    if (stopped_) {
      outcome->set_value(SendResult{false, "the exporter is shut down"});
      return;
    }
    asio::co_spawn(io_, send(std::move(payload), end),
                   [outcome](std::exception_ptr e, SendResult r) {
                     if (e) {
                       try {
                         std::rethrow_exception(e);
                       } catch (const std::exception& x) {
                         r = SendResult{false, x.what()};
                       } catch (...) {
                         r = SendResult{false, "unknown error"};
                       }
                     }
                     outcome->set_value(std::move(r));
                   });
  }

  void stop(telemetry::Deadline deadline) override {
    if (stopped_.exchange(true)) return;
    // The client is destroyed on its own loop, then the loop stops; an abandoned send is
    // destroyed with the io_context (its outcome's promise then breaks, which its waiter reads as
    // a failure).
    std::promise<void> done;
    auto finished = done.get_future();
    asio::post(io_, [this, &done] {
      client_.reset();
      io_.stop();
      done.set_value();
    });
    if (finished.wait_until(deadline) != std::future_status::ready) io_.stop();
    work_.reset();
    thread_.join();
  }

 private:
  asio::awaitable<SendResult> send(std::string body, Clock::time_point end) {
    const OtlpSettings& settings = owner_.settings;
    for (int attempt = 1;; ++attempt) {
      const auto now = Clock::now();
      if (now >= end) co_return SendResult{false, "the OTLP timeout expired"};
      http::ClientRequest req;
      req.method = http::Method::post;
      req.url = settings.url;
      req.body = body;
      req.retry = false;
      req.timeout = std::chrono::ceil<std::chrono::milliseconds>(end - now);
      // A collector answers with a small ExportServiceResponse (a partial_success at most): a
      // longer answer is a broken or hostile collector, cut off before it costs memory.
      req.max_response_bytes = kMaxCollectorAnswerBytes;
      req.max_response_setting = "the OTLP exporter's limit for a collector's answer";
      req.headers.push_back({"Content-Type", content_type(settings.protocol)});
      req.headers.push_back({"User-Agent", kUserAgent});
      if (settings.compression == Compression::gzip) {
        req.headers.push_back({"Content-Encoding", "gzip"});
      }
      for (const auto& [k, v] : settings.headers) req.headers.push_back({k, v});

      std::optional<int> status;
      std::optional<std::chrono::milliseconds> retry_after;
      std::string error;
      try {
        http::ClientResponse res = co_await client_->request(std::move(req));
        status = res.status;
        if (classify(status) == AttemptOutcome::success) {
          owner_.accepted(res.body);
          co_return SendResult{true, {}};
        }
        retry_after = parse_retry_after(http::find_header(res.headers, "retry-after"));
        error = "HTTP " + std::to_string(res.status) + " from " + settings.url;
      } catch (const http::TlsError& e) {
        // An untrusted certificate or a wrong host fails every retry the same way: the batch is
        // dropped now instead of waiting out the OTLP timeout (not a connection error: no retry
        // could fix it).
        co_return SendResult{false, e.what()};
      } catch (const http::ResponseTooLargeError& e) {
        // An endless answer would be endless again on a retry.
        co_return SendResult{false, e.what()};
      } catch (const std::exception& e) {
        error = e.what();
      }
      if (classify(status) == AttemptOutcome::permanent) co_return SendResult{false, error};
      const auto delay = retry_delay(attempt, jitter_(rng_), retry_after, Clock::now(), end);
      if (!delay) {
        co_return SendResult{false, error + " (no time left to retry within the OTLP timeout)"};
      }
      owner_.retried();
      asio::steady_timer timer(io_, *delay);
      co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
  }

  OtlpSender::Impl& owner_;
  std::mt19937_64 rng_{std::random_device{}()};  // loop thread only
  std::uniform_real_distribution<double> jitter_{-1.0, 1.0};
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::optional<http::HttpClient> client_;  // loop thread only
  std::thread thread_;
  std::atomic<bool> stopped_{false};
};

}  // namespace

// ---- OtlpSender ---------------------------------------------------------------------------------

OtlpSender::OtlpSender(OtlpSettings settings, Signal signal, std::chrono::milliseconds log_interval)
    : impl_(std::make_unique<Impl>(std::move(settings), signal, log_interval)) {
  if (impl_->settings.protocol == OtlpProtocol::grpc) {
    impl_->transport = make_grpc_transport(*impl_);
  } else {
    impl_->transport = std::make_unique<HttpTransport>(*impl_);
  }
}

OtlpSender::~OtlpSender() { shutdown(Clock::now() + std::chrono::seconds(1)); }

bool OtlpSender::send(std::string payload, std::size_t items,
                      telemetry::Deadline deadline) noexcept {
  Impl& s = *impl_;
  if (s.stopped) {
    s.failed(items, "the exporter is shut down");
    return false;
  }
  try {
    if (s.settings.compression == Compression::gzip && s.settings.protocol != OtlpProtocol::grpc) {
      payload = gzip(payload);  // gRPC compresses the call itself
    }
    const auto end = std::min(deadline, Clock::now() + s.settings.timeout);
    auto outcome = std::make_shared<std::promise<SendResult>>();
    auto result = outcome->get_future();
    s.transport->start(std::move(payload), end, std::move(outcome));
    // The transport gives up by `end` itself; the margin covers its thread's scheduling.
    if (result.wait_until(std::min(deadline, end + std::chrono::milliseconds(200))) !=
        std::future_status::ready) {
      s.failed(items, "the export did not finish within its deadline");
      return false;
    }
    SendResult r = result.get();
    if (r.ok) {
      std::lock_guard lock(s.mutex);
      ++s.stats.batches_sent;
      return true;
    }
    s.failed(items, r.error);
  } catch (const std::future_error&) {
    s.failed(items, "the exporter stopped before the export finished");
  } catch (const std::exception& e) {
    s.failed(items, e.what());
  } catch (...) {
    s.failed(items, "unknown error");
  }
  return false;
}

void OtlpSender::dropped(std::size_t items, const std::string& error) noexcept {
  try {
    impl_->failed(items, error);
  } catch (...) {
  }
}

void OtlpSender::shutdown(telemetry::Deadline deadline) noexcept {
  try {
    Impl& s = *impl_;
    std::lock_guard stop_lock(s.stop_mutex);
    if (s.stopped.exchange(true)) return;
    std::optional<std::string> line;
    {
      std::lock_guard lock(s.mutex);
      line = s.failure_log.pending(Clock::now());
    }
    if (line) telemetry::shutdown_report::warn_or_hold(std::move(*line));
    s.transport->stop(deadline);
  } catch (...) {
  }
}

OtlpSender::Stats OtlpSender::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

const OtlpSettings& OtlpSender::settings() const noexcept { return impl_->settings; }

Signal OtlpSender::signal() const noexcept { return impl_->signal; }

}  // namespace gym::exporters
