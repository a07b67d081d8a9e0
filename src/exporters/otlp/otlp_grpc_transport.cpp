// The OTLP/gRPC transport of OtlpSender: one generic call per export on a channel to the
// collector, completed on a queue drained by the transport's own thread.
#include "exporters/otlp/otlp_transport.h"

#include "exporters/otlp/otlp_settings.h"

#include <pthread.h>

#include <openssl/x509.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
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

namespace gym::exporters {

namespace {

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

std::unique_ptr<OtlpSender::Transport> make_grpc_transport(OtlpSender::Impl& owner) {
  return std::make_unique<GrpcTransport>(owner);
}

}  // namespace gym::exporters
