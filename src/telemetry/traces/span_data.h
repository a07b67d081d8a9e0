#pragma once
// A finished span as plain data: what the processor queues and the exporters encode. No behaviour;
// the tracer fills it.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "telemetry/common/attributes.h"
#include "telemetry/traces/trace_context.h"

namespace gym::telemetry {

// OTLP's numbering (Span.SpanKind).
enum class SpanKind : int { internal = 1, server = 2, client = 3 };
// OTLP's numbering (Status.StatusCode).
enum class StatusCode : int { unset = 0, ok = 1, error = 2 };

// The redaction rule (docs/design/telemetry-contract.md#spans-and-propagation) for a string
// attribute under `key`: its last dotted part is one of the names below, in any case.
constexpr bool redacted_key(std::string_view key) noexcept {
  const auto dot = key.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? key : key.substr(dot + 1);
  for (std::string_view name :
       {"prompt", "input_text", "output_text", "text", "password", "token", "secret", "key"}) {
    if (name.size() != last.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < name.size() && same; ++i) {
      const char c = last[i];
      same = name[i] == (c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    }
    if (same) return true;
  }
  return false;
}

// The key of a span attribute: a string literal, whose redaction is decided when the program is
// compiled. A key from anywhere else (a std::string, a temporary) does not compile, so recording
// an attribute never copies its key and a SpanAttribute can never hold a dangling one.
class SpanKey {
 public:
  template <std::size_t N>
  consteval SpanKey(const char (&key)[N])  // NOLINT(google-explicit-constructor): literals only
      : key_(key, N - 1), redacted_(redacted_key(std::string_view(key, N - 1))) {}
  constexpr std::string_view key() const noexcept { return key_; }
  constexpr bool redacted() const noexcept { return redacted_; }
  constexpr operator std::string_view() const noexcept { return key_; }  // NOLINT: a view
  friend constexpr bool operator==(SpanKey a, std::string_view b) noexcept { return a.key_ == b; }

 private:
  std::string_view key_;
  bool redacted_;
};

// An attribute of a span or span event.
struct SpanAttribute {
  SpanAttribute(SpanKey k, AttributeValue v) : key(k), value(std::move(v)) {}
  // The value built in place, as a span's attributes are (Span::set_attribute).
  template <class T, class... Args>
  SpanAttribute(SpanKey k, std::in_place_type_t<T> type, Args&&... args)
      : key(k), value(type, std::forward<Args>(args)...) {}

  SpanKey key;
  AttributeValue value;
};

// A span's attributes: the catalogue's spans set at most five, plus the truncation mark,
// so they live in the span itself rather than in an allocation of their own.
using SpanAttributes = boost::container::small_vector<SpanAttribute, 6>;

struct SpanEvent {
  std::string name;
  std::uint64_t time_unix_nano = 0;
  std::vector<SpanAttribute> attributes;
};

struct SpanData {
  TraceId trace_id{};
  SpanId span_id{};
  SpanId parent_span_id{};  // all zero: a root span
  std::string trace_state;
  bool sampled = true;  // exported spans always are; kept for the flags field
  std::string name;
  SpanKind kind = SpanKind::internal;
  std::uint64_t start_time_unix_nano = 0;
  std::uint64_t end_time_unix_nano = 0;
  SpanAttributes attributes;
  std::vector<SpanEvent> events;
  StatusCode status = StatusCode::unset;
  std::string status_message;

  const AttributeValue* attribute(std::string_view key) const noexcept;
};

// Finished spans travel by pointer from the Span that recorded them through the processor's queue
// to the exporter: a SpanData is never moved on the way (moving one member by member cost ~800
// instructions per span, a quarter of what the `default` span groups added to a rollout).
using SpanBatch = std::span<const std::unique_ptr<SpanData>>;

// "internal", "server", "client" (the console exporter's `kind`).
std::string_view to_string(SpanKind kind) noexcept;
std::string_view to_string(StatusCode code) noexcept;

}  // namespace gym::telemetry
