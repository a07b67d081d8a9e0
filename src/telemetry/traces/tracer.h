#pragma once
// Spans of one process (docs/design/telemetry-contract.md#spans-and-propagation): a Tracer knows
// the span groups, the sampler and where finished spans go; a Span is the handle a site holds while
// its work runs.
//
// The gate at a site is one bit test before anything is built:
//
//   telemetry::Span span;
//   if (tracer.on(SpanGroup::verify)) span = tracer.start("gym.verify", SpanKind::internal,
//   req.trace);
//
// A started span always has a context (ids) for the calls it makes; only a sampled one records
// attributes and reaches the processor when it ends (explicitly or when the handle goes away).
// Attribute hygiene is applied as attributes are set: string values of keys whose last
// dotted part is prompt, input_text, output_text, text, password, token, secret or key become
// "[REDACTED]".
//
// Thread-safety: a Tracer is shared by every thread of its process (const use only); a Span is
// used by one coroutine at a time.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "telemetry/traces/sampler.h"
#include "telemetry/traces/span_data.h"
#include "telemetry/traces/span_groups.h"
#include "telemetry/traces/trace_context.h"

namespace gym::telemetry {

// Where finished spans go (BatchSpanProcessor). Never blocks and never throws.
class SpanProcessor {
 public:
  SpanProcessor() = default;
  virtual ~SpanProcessor() = default;
  SpanProcessor(const SpanProcessor&) = delete;
  SpanProcessor& operator=(const SpanProcessor&) = delete;

  virtual void on_end(std::unique_ptr<SpanData> span) noexcept = 0;
  // Exports what is queued; true when nothing is left by `wait`.
  virtual bool force_flush(std::chrono::milliseconds wait) noexcept = 0;
  // force_flush, then stop; later spans are dropped.
  virtual bool shutdown(std::chrono::milliseconds wait) noexcept = 0;
};

class Span;

class Tracer {
 public:
  Tracer() = default;  // no group on: sites start nothing
  // `processor` must outlive the tracer and every span it starts.
  Tracer(SpanGroups groups, Sampler sampler, SpanProcessor* processor);
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  bool on(SpanGroup group) const noexcept { return groups_.has(group); }

  // A span named `name` under `parent` (no valid parent: a new trace). Its sampled flag follows
  // the sampler; unsampled, it records nothing but still has ids to propagate.
  // `name` by value: a site that builds it ("POST /verify") hands it over without a copy.
  Span start(std::string name, SpanKind kind, const SpanContext& parent) const;

  // From now on spans that end because their handle is destroyed (requests cut off at shutdown)
  // are marked `nemo.span.truncated`.
  void begin_shutdown() noexcept { shutting_down_.store(true, std::memory_order_relaxed); }

 private:
  friend class Span;
  // Ends `data` now (its end time; the truncation mark when `truncated`) and hands it to the
  // processor: the one way a span ends, explicitly or with its handle.
  void finish(std::unique_ptr<SpanData> data, bool truncated) const noexcept;

  SpanGroups groups_;
  Sampler sampler_;
  SpanProcessor* processor_ = nullptr;
  std::atomic<bool> shutting_down_{false};
};

class Span {
 public:
  Span() = default;  // no span: context() is invalid, every call does nothing
  Span(Span&& other) noexcept;
  Span& operator=(Span&& other) noexcept;
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  ~Span();  // end(), marked truncated when the tracer is shutting down

  bool recording() const noexcept { return data_ != nullptr; }
  // Status ERROR was set (record_exception or set_status).
  bool failed() const noexcept { return data_ && data_->status == StatusCode::error; }
  // The ids to propagate: valid whenever the span was started (sampled or not).
  const SpanContext& context() const noexcept { return context_; }
  // Makes this span the current one of `trace`, in place (unchanged when no span was started).
  void enter(TraceContext& trace) const {
    if (context_.valid()) trace.span = context_;
  }

  void set_attribute(SpanKey key, std::string_view value);
  void set_attribute(SpanKey key, const char* value) {
    set_attribute(key, std::string_view(value));
  }
  void set_attribute(SpanKey key, std::int64_t value);
  void set_attribute(SpanKey key, int value) {
    set_attribute(key, static_cast<std::int64_t>(value));
  }
  void set_attribute(SpanKey key, double value);
  void set_attribute(SpanKey key, bool value);
  // An `exception` event (exception.type, exception.message) and status ERROR with the message.
  void record_exception(std::string_view type, std::string_view message);
  void set_status(StatusCode code, std::string_view message = {});
  // Ends the span now; later calls do nothing.
  void end() noexcept;
  // Ends it as work that never finished: marked `nemo.span.truncated`, as spans still open at
  // telemetry shutdown are.
  void cut_off() noexcept;

 private:
  friend class Tracer;
  // Sets `key` to a T made of `args`: replaces the value already set, else builds a new
  // attribute in place (no temporary string or variant on the way).
  template <class T, class... Args>
  void put(SpanKey key, Args&&... args);

  const Tracer* tracer_ = nullptr;
  std::unique_ptr<SpanData> data_;  // null: not recording
  SpanContext context_;
};

// Nanoseconds since the Unix epoch (span timestamps).
std::uint64_t unix_nanos() noexcept;

}  // namespace gym::telemetry
