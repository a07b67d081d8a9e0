// OtlpSender (otlp_sender.h): the counting, logging and waiting shared by both transports, then
// the OTLP/HTTP transport (an Asio loop with its own HttpClient) and the OTLP/gRPC transport (a
// completion queue drained by its own thread).
#include "exporters/otlp/otlp_sender.h"

#include "telemetry/shutdown_report.h"

#include <pthread.h>

#include <openssl/x509.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <grpc/support/log.h>
#include <grpcpp/alarm.h>
#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/channel_arguments.h>
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

namespace {

struct SendResult {
  bool ok = false;
  std::string error;
};

// Where a transport delivers the outcome of one send(). Shared: a caller that stopped waiting at
// its deadline leaves the promise to the transport, which may still finish the batch.
using Outcome = std::shared_ptr<std::promise<SendResult>>;

constexpr const char* kUserAgent = "gym-cpp/" GYM_VERSION;
// The longest answer taken from an OTLP/HTTP collector.
constexpr std::uint64_t kMaxCollectorAnswerBytes = 64 * 1024;

}  // namespace

// ---- What both transports share -----------------------------------------------------------------

class OtlpSender::Transport {
 public:
  virtual ~Transport() = default;
  // Delivers `payload` (already compressed where the transport does not compress) on the
  // transport's thread, by `end`; the outcome goes to `outcome`, also when the transport stops.
  virtual void start(std::string payload, Clock::time_point end, Outcome outcome) = 0;
  // Abandons what is in flight and ends the thread, by `deadline` where it can.
  virtual void stop(telemetry::Deadline deadline) = 0;
};

struct OtlpSender::Impl {
  Impl(OtlpSettings s, Signal sig, std::chrono::milliseconds log_interval)
      : settings(std::move(s)), signal(sig), failure_log(log_interval, sig) {}

  void failed(std::size_t items, const std::string& error) {
    std::optional<std::string> line;
    {
      std::lock_guard lock(mutex);
      ++stats.batches_dropped;
      stats.items_dropped += items;
      line = failure_log.dropped(items, error, Clock::now());
    }
    if (line) telemetry::shutdown_report::warn_or_hold(std::move(*line));
  }

  void retried() {
    std::lock_guard lock(mutex);
    ++stats.retries;
  }

  // An accepted response's body: its partial_success, if any, is counted and logged.
  void accepted(std::string_view body) {
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

  const OtlpSettings settings;
  const Signal signal;
  mutable std::mutex mutex;  // stats, failure_log
  Stats stats;
  FailureLog failure_log;
  std::unique_ptr<Transport> transport;
  std::atomic<bool> stopped{false};
  std::mutex stop_mutex;  // one stop at a time
};

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

// ---- OTLP/gRPC ----------------------------------------------------------------------------------

// gRPC's own log lines (a refused connection, a failed handshake) would bypass the rate limit of
// the failure log: they go to the debug level of the process's log, where the sender's summaries
// say the same.
void route_grpc_logs() {
  static std::once_flag once;
  std::call_once(once, [] {
    gpr_set_log_function([](gpr_log_func_args* args) {
      spdlog::debug("grpc: {} ({}:{})", args->message, args->file, args->line);
    });
  });
}

gpr_timespec monotonic_in(Clock::duration d) {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::max(d, Clock::duration::zero()))
          .count();
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                      gpr_time_from_nanos(static_cast<std::int64_t>(ns), GPR_TIMESPAN));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The trust anchors of a TLS channel: empty (gRPC's default: the system roots) unless
// SSL_CERT_FILE is set, whose certificates are then trusted next to OpenSSL's default bundle, as
// OpenSSL's default verify paths do for the HTTP path.
std::string pem_root_certs() {
  const char* file = std::getenv("SSL_CERT_FILE");
  if (!file || !*file) return {};
  std::string pem = read_file(file);
  if (pem.empty()) {
    spdlog::warn(
        "telemetry: SSL_CERT_FILE={} cannot be read; the gRPC exporter trusts the system "
        "roots only",
        file);
    return {};
  }
  if (const char* bundle = X509_get_default_cert_file()) {
    const std::string system = read_file(bundle);
    if (!system.empty()) pem += "\n" + system;
  }
  return pem;
}

const char* code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::OK:
      return "OK";
    case grpc::CANCELLED:
      return "CANCELLED";
    case grpc::UNKNOWN:
      return "UNKNOWN";
    case grpc::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::ABORTED:
      return "ABORTED";
    case grpc::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::INTERNAL:
      return "INTERNAL";
    case grpc::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "status";
  }
}

// gRPC reports a refused TLS handshake (untrusted certificate, a certificate for another host)
// as UNAVAILABLE, like a refused connection; only its message tells them apart. As over HTTP, no
// retry would change it, so it is permanent.
bool is_tls_refusal(const grpc::Status& status) {
  std::string m = status.error_message();
  std::transform(m.begin(), m.end(), m.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return m.find("handshake") != std::string::npos ||
         m.find("peer certificate") != std::string::npos ||
         m.find("certificate verify failed") != std::string::npos;
}

class GrpcTransport final : public OtlpSender::Transport {
 public:
  explicit GrpcTransport(OtlpSender::Impl& owner) : owner_(owner) {
    route_grpc_logs();
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "gym-otlp-grpc");
      run();
    });
  }
  ~GrpcTransport() override { stop(Clock::now() + std::chrono::seconds(1)); }

  void start(std::string payload, Clock::time_point end, Outcome outcome) override {
    auto call = std::make_unique<Call>();
    // The slice owns the payload: no copy of a batch that may be megabytes.
    auto* owned = new std::string(std::move(payload));
    grpc::Slice slice(
        owned->data(), owned->size(), [](void* p) { delete static_cast<std::string*>(p); }, owned);
    call->request = grpc::ByteBuffer(&slice, 1);
    call->end = end;
    call->outcome = std::move(outcome);
    call->alarm = std::make_unique<grpc::Alarm>();
    std::lock_guard lock(mutex_);
    if (!accepting_) {
      call->outcome->set_value(SendResult{false, "the exporter is shut down"});
      return;
    }
    Call* c = call.get();
    calls_.emplace(c, std::move(call));
    // The caller only queues the batch: the call is made, retried and finished on the completion
    // queue's thread, where the channel lives.
    c->alarm->Set(&cq_, gpr_now(GPR_CLOCK_MONOTONIC), c);
  }

  void stop(telemetry::Deadline /*deadline*/) override {
    {
      std::lock_guard lock(mutex_);
      if (!accepting_) return;
      accepting_ = false;
      stop_alarm_.Set(&cq_, gpr_now(GPR_CLOCK_MONOTONIC), &stop_alarm_);
    }
    // Cancelling is local to this process: the thread ends promptly however the collector
    // behaves.
    thread_.join();
  }

 private:
  // One send(), across its attempts; touched by the completion queue's thread only once queued.
  struct Call {
    grpc::ByteBuffer request;
    Clock::time_point end;
    Outcome outcome;
    int attempt = 0;
    bool calling = false;  // Finish pending (else the alarm is)
    std::unique_ptr<grpc::Alarm> alarm;
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::GenericClientAsyncResponseReader> reader;
    grpc::ByteBuffer response;
    grpc::Status status;
    std::string last_error;
  };

  void run() {
    connect();
    void* tag = nullptr;
    bool ok = false;
    while (cq_.Next(&tag, &ok)) {
      if (tag == &stop_alarm_) {
        stopping_ = true;
        std::lock_guard lock(mutex_);
        for (auto& [c, call] : calls_) {
          if (call->calling) {
            call->context->TryCancel();
          } else {
            call->alarm->Cancel();
          }
        }
        shutdown_if_done();
        continue;
      }
      proceed(static_cast<Call*>(tag), ok);
    }
    stub_.reset();
    channel_.reset();
  }

  void connect() {
    try {
      const GrpcChannel where = grpc_channel(owner_.settings);
      target_ = where.target;
      std::shared_ptr<grpc::ChannelCredentials> credentials;
      if (where.tls) {
        const OtlpSettings& s = owner_.settings;
        grpc::SslCredentialsOptions options;
        // The CERTIFICATE file replaces the roots, as it replaces the trust store over HTTP.
        options.pem_root_certs =
            s.certificate.empty() ? pem_root_certs() : read_file(s.certificate);
        if (!s.client_certificate.empty()) {
          options.pem_cert_chain = read_file(s.client_certificate);
          options.pem_private_key = read_file(s.client_key);
        }
        credentials = grpc::SslCredentials(options);
      } else {
        credentials = grpc::InsecureChannelCredentials();
      }
      grpc::ChannelArguments args;
      args.SetUserAgentPrefix(kUserAgent);      // "gym-cpp/<version> grpc-c++/<version> ..."
      args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);  // the sender's retries are the only ones
      // A collector that comes back is found within 5 s, whatever the outage lasted.
      args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 1000);
      args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
      channel_ = grpc::CreateCustomChannel(where.target, credentials, args);
      stub_ = std::make_unique<grpc::GenericStub>(channel_);
      // HTTP header names are case-insensitive, gRPC metadata keys lowercase. What gRPC could not
      // carry (resolve_otlp refuses it; settings made by hand may hold it) would abort the call:
      // it is left out, once, with a warning naming the key.
      for (const auto& [k, v] : owner_.settings.headers) {
        if (auto why = grpc_metadata_problem(k, v); !why.empty()) {
          spdlog::warn("telemetry: the {} exporter leaves a header out of its gRPC metadata: {}",
                       signal_name(owner_.signal), why);
          continue;
        }
        std::string key = k;
        std::transform(key.begin(), key.end(), key.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        metadata_.emplace_back(std::move(key), v);
      }
    } catch (const std::exception& e) {
      channel_error_ = e.what();
    }
  }

  void proceed(Call* call, bool ok) {
    if (call->calling) {
      call->calling = false;
      completed(call);
      return;
    }
    // The alarm: the first attempt, or a retry's backoff, is due (ok), or it was cancelled.
    if (!ok || stopping_) {
      finish(call, SendResult{false, call->last_error.empty()
                                         ? "the exporter is shut down"
                                         : call->last_error + " (the exporter shut down)"});
      return;
    }
    attempt(call);
  }

  void attempt(Call* call) {
    const auto now = Clock::now();
    if (!stub_) {
      finish(call, SendResult{false, channel_error_});
      return;
    }
    if (now >= call->end) {
      finish(call, SendResult{false, call->last_error.empty() ? "the OTLP timeout expired"
                                                              : call->last_error});
      return;
    }
    ++call->attempt;
    call->context = std::make_unique<grpc::ClientContext>();
    call->context->set_deadline(monotonic_in(call->end - now));
    for (const auto& [k, v] : metadata_) call->context->AddMetadata(k, v);
    if (owner_.settings.compression == Compression::gzip) {
      call->context->set_compression_algorithm(GRPC_COMPRESS_GZIP);
    }
    call->response.Clear();
    call->reader = stub_->PrepareUnaryCall(
        call->context.get(), std::string(grpc_method(owner_.signal)), call->request, &cq_);
    call->reader->StartCall();
    call->calling = true;
    call->reader->Finish(&call->response, &call->status, call);
  }

  void completed(Call* call) {
    const grpc::Status& status = call->status;
    const AttemptOutcome outcome = classify_grpc(static_cast<int>(status.error_code()));
    if (outcome == AttemptOutcome::success) {
      std::vector<grpc::Slice> slices;
      std::string body;
      if (call->response.Dump(&slices).ok()) {
        for (const auto& s : slices)
          body.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
      owner_.accepted(body);
      finish(call, SendResult{true, {}});
      return;
    }
    std::string error =
        fmt::format("gRPC {} from {}: {}", code_name(status.error_code()), target_,
                    status.error_message().empty() ? "no message" : status.error_message());
    call->last_error = error;
    // The attempt is over: its context and reader can go.
    call->reader.reset();
    call->context.reset();
    if (stopping_ || outcome == AttemptOutcome::permanent || is_tls_refusal(status)) {
      finish(call, SendResult{false, error});
      return;
    }
    const auto delay =
        retry_delay(call->attempt, jitter_(rng_), std::nullopt, Clock::now(), call->end);
    if (!delay) {
      finish(call, SendResult{false, error + " (no time left to retry within the OTLP timeout)"});
      return;
    }
    owner_.retried();
    call->alarm = std::make_unique<grpc::Alarm>();
    call->alarm->Set(&cq_, monotonic_in(*delay), call);
  }

  void finish(Call* call, SendResult result) {
    call->outcome->set_value(std::move(result));
    std::lock_guard lock(mutex_);
    calls_.erase(call);
    shutdown_if_done();
  }

  // With mutex_ held: once stopping and nothing is in flight, the queue shuts down, and run()'s
  // loop ends when it is drained.
  void shutdown_if_done() {
    if (stopping_ && calls_.empty() && !cq_shut_) {
      cq_shut_ = true;
      cq_.Shutdown();
    }
  }

  OtlpSender::Impl& owner_;
  grpc::CompletionQueue cq_;
  std::shared_ptr<grpc::Channel> channel_;                     // the queue's thread only
  std::unique_ptr<grpc::GenericStub> stub_;                    // the queue's thread only
  std::string target_;                                         // the queue's thread only
  std::string channel_error_;                                  // the queue's thread only
  std::vector<std::pair<std::string, std::string>> metadata_;  // the queue's thread only
  std::mt19937_64 rng_{std::random_device{}()};                // the queue's thread only
  std::uniform_real_distribution<double> jitter_{-1.0, 1.0};
  bool stopping_ = false;  // the queue's thread only: the stop alarm was seen

  std::mutex mutex_;  // accepting_, calls_, cq_shut_, and Alarm::Set on cq_
  bool accepting_ = true;
  bool cq_shut_ = false;
  std::map<Call*, std::unique_ptr<Call>> calls_;
  grpc::Alarm stop_alarm_;
  std::thread thread_;
};

}  // namespace

// ---- OtlpSender ---------------------------------------------------------------------------------

OtlpSender::OtlpSender(OtlpSettings settings, Signal signal, std::chrono::milliseconds log_interval)
    : impl_(std::make_unique<Impl>(std::move(settings), signal, log_interval)) {
  if (impl_->settings.protocol == OtlpProtocol::grpc) {
    impl_->transport = std::make_unique<GrpcTransport>(*impl_);
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
