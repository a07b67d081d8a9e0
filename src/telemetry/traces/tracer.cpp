#include "telemetry/traces/tracer.h"

#include <pthread.h>

#include <array>
#include <bit>
#include <cstring>
#include <optional>
#include <random>
#include <utility>

#include "telemetry/traces/span_pool.h"

namespace gym::telemetry {

namespace {

// Ids come from a per-thread generator seeded from the OS, independent of any user seed; a
// fork bumps the generation so a worker never repeats its parent's ids.
std::atomic<unsigned> fork_generation{0};
const int register_fork_handler = [] {
  ::pthread_atfork(nullptr, nullptr,
                   [] { fork_generation.fetch_add(1, std::memory_order_relaxed); });
  return 0;
}();

// xoshiro256** (Blackman and Vigna): 256 bits of state and a few instructions per word, a
// quarter of what mt19937_64 costs a span. Ids must be unpredictable across processes and
// unique in practice, not secret: the OS seeds it.
class IdGenerator {
 public:
  explicit IdGenerator(std::random_device& device) {
    do {
      for (auto& w : s_) w = (std::uint64_t{device()} << 32) | device();
    } while ((s_[0] | s_[1] | s_[2] | s_[3]) == 0);  // the one state it never leaves
  }
  std::uint64_t operator()() noexcept {
    const std::uint64_t out = std::rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return out;
  }

 private:
  std::uint64_t s_[4];
};

IdGenerator& id_engine() {
  thread_local std::optional<IdGenerator> engine;
  thread_local unsigned seeded_generation = ~0u;
  const unsigned now = fork_generation.load(std::memory_order_relaxed);
  if (seeded_generation != now) [[unlikely]] {
    std::random_device device;
    engine.emplace(device);
    seeded_generation = now;
  }
  return *engine;
}

// Whole words of the generator (never all zero: W3C ids must not be).
template <std::size_t N>
void fill_random(std::array<std::uint8_t, N>& bytes) {
  static_assert(N % 8 == 0);
  auto& engine = id_engine();
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      const std::uint64_t r = engine();
      std::memcpy(bytes.data() + i, &r, 8);
    }
  } while (is_zero(bytes));
}

}  // namespace

std::uint64_t unix_nanos() noexcept {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

const AttributeValue* SpanData::attribute(std::string_view key) const noexcept {
  for (const auto& a : attributes)
    if (a.key == key) return &a.value;
  return nullptr;
}

std::string_view to_string(SpanKind kind) noexcept {
  switch (kind) {
    case SpanKind::internal:
      return "internal";
    case SpanKind::server:
      return "server";
    case SpanKind::client:
      return "client";
  }
  return "internal";
}

std::string_view to_string(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::unset:
      return "unset";
    case StatusCode::ok:
      return "ok";
    case StatusCode::error:
      return "error";
  }
  return "unset";
}

// ---- Tracer ----

Tracer::Tracer(SpanGroups groups, Sampler sampler, SpanProcessor* processor)
    : groups_(groups), sampler_(sampler), processor_(processor) {
  if (!processor_) groups_ = SpanGroups{};
}

Span Tracer::start(std::string name, SpanKind kind, const SpanContext& parent) const {
  Span span;
  span.tracer_ = this;
  const bool has_parent = parent.valid();
  if (has_parent) {
    span.context_.trace_id = parent.trace_id;
    span.context_.trace_state = parent.trace_state;
  } else {
    fill_random(span.context_.trace_id);
  }
  fill_random(span.context_.span_id);
  span.context_.sampled = sampler_.sample(has_parent ? &parent : nullptr, span.context_.trace_id);
  if (!span.context_.sampled) return span;
  auto data = SpanPool::instance().take();
  data->trace_id = span.context_.trace_id;
  data->span_id = span.context_.span_id;
  if (has_parent) data->parent_span_id = parent.span_id;
  data->trace_state = span.context_.trace_state;
  data->name = std::move(name);
  data->kind = kind;
  data->start_time_unix_nano = unix_nanos();
  span.data_ = std::move(data);
  return span;
}

void Tracer::finish(std::unique_ptr<SpanData> data, bool truncated) const noexcept {
  data->end_time_unix_nano = unix_nanos();
  if (truncated) {
    data->attributes.push_back({"nemo.span.truncated", true});
    data->events.push_back({"nemo.span.truncated",
                            data->end_time_unix_nano,
                            {{"reason", std::string("still open at telemetry shutdown")}}});
  }
  processor_->on_end(std::move(data));
}

// ---- Span ----

Span::Span(Span&& other) noexcept
    : tracer_(std::exchange(other.tracer_, nullptr)),
      data_(std::move(other.data_)),
      context_(std::move(other.context_)) {}

Span& Span::operator=(Span&& other) noexcept {
  if (this != &other) {
    end();
    tracer_ = std::exchange(other.tracer_, nullptr);
    data_ = std::move(other.data_);
    context_ = std::move(other.context_);
  }
  return *this;
}

Span::~Span() {
  if (data_)
    tracer_->finish(std::move(data_), tracer_->shutting_down_.load(std::memory_order_relaxed));
}

template <class T, class... Args>
void Span::put(SpanKey key, Args&&... args) {
  for (auto& a : data_->attributes) {
    if (a.key.key() == key.key()) {
      a.value.emplace<T>(std::forward<Args>(args)...);
      return;
    }
  }
  data_->attributes.emplace_back(key, std::in_place_type<T>, std::forward<Args>(args)...);
}

void Span::set_attribute(SpanKey key, std::string_view value) {
  if (data_) put<std::string>(key, key.redacted() ? std::string_view("[REDACTED]") : value);
}
void Span::set_attribute(SpanKey key, std::int64_t value) {
  if (data_) put<std::int64_t>(key, value);
}
void Span::set_attribute(SpanKey key, double value) {
  if (data_) put<double>(key, value);
}
void Span::set_attribute(SpanKey key, bool value) {
  if (data_) put<bool>(key, value);
}

void Span::record_exception(std::string_view type, std::string_view message) {
  if (!data_) return;
  data_->events.push_back(
      {"exception",
       unix_nanos(),
       {{"exception.type", std::string(type)}, {"exception.message", std::string(message)}}});
  set_status(StatusCode::error, message);
}

void Span::set_status(StatusCode code, std::string_view message) {
  if (!data_) return;
  data_->status = code;
  data_->status_message = code == StatusCode::error ? std::string(message) : std::string();
}

void Span::end() noexcept {
  if (data_) tracer_->finish(std::move(data_), false);
}

void Span::cut_off() noexcept {
  if (data_) tracer_->finish(std::move(data_), true);
}

}  // namespace gym::telemetry
