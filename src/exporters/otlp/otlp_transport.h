#pragma once
// What OtlpSender (otlp_sender.h) shares with its two transports: the sender's state (counts, the
// failure log) and the interface each transport implements. Internal to the exporters library.
#include "exporters/otlp/otlp_sender.h"
#include "exporters/otlp/retry.h"

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace gym::exporters {

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

  // One batch of `items` lost, said through the failure log.
  void failed(std::size_t items, const std::string& error);
  void retried() {
    std::lock_guard lock(mutex);
    ++stats.retries;
  }
  // An accepted response's body: its partial_success, if any, is counted and logged.
  void accepted(std::string_view body);

  const OtlpSettings settings;
  const Signal signal;
  mutable std::mutex mutex;  // stats, failure_log
  Stats stats;
  FailureLog failure_log;
  std::unique_ptr<Transport> transport;
  std::atomic<bool> stopped{false};
  std::mutex stop_mutex;  // one stop at a time
};

// The OTLP/gRPC transport (otlp_grpc_transport.cpp): a completion queue drained by its own thread.
std::unique_ptr<OtlpSender::Transport> make_grpc_transport(OtlpSender::Impl& owner);

}  // namespace gym::exporters
