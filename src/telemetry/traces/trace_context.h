#pragma once
// W3C Trace Context and Baggage (docs/design/telemetry-contract.md#spans-and-propagation): the ids
// of a span, the `traceparent` and `tracestate` headers that carry them between processes, and what
// a handler hands to the calls it makes (TraceContext). Pure functions and plain data: no I/O, no
// shared state.
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

namespace gym::telemetry {

using TraceId = std::array<std::uint8_t, 16>;
using SpanId = std::array<std::uint8_t, 8>;

// Lowercase hex of the bytes (32 digits for a trace id, 16 for a span id).
std::string to_hex(const TraceId& id);
std::string to_hex(const SpanId& id);
// Word loads rather than byte loops, inline: every span and every extraction tests its ids.
inline bool is_zero(const TraceId& id) noexcept {
  std::uint64_t words[2];
  std::memcpy(words, id.data(), sizeof words);
  return (words[0] | words[1]) == 0;
}
inline bool is_zero(const SpanId& id) noexcept {
  std::uint64_t word;
  std::memcpy(&word, id.data(), sizeof word);
  return word == 0;
}

// The identity of one span as it crosses process boundaries.
struct SpanContext {
  TraceId trace_id{};
  SpanId span_id{};
  bool sampled = false;     // trace-flags bit 0
  std::string trace_state;  // the tracestate header, passed on unchanged
  bool remote = false;      // extracted from a request rather than started here

  // Both ids non-zero: there is a parent to attach to.
  bool valid() const noexcept { return !is_zero(trace_id) && !is_zero(span_id); }
};

// `traceparent` version 00: "00-<32 hex>-<16 hex>-<2 hex flags>". Later versions are read by their
// first four fields, as the W3C specification asks. nullopt for anything malformed (uppercase
// hex, all-zero ids, version ff, wrong lengths).
std::optional<SpanContext> parse_traceparent(std::string_view header);
// The traceparent header of `context` (version 00).
std::string format_traceparent(const SpanContext& context);
// The same 55 characters written at `out` (into an outgoing request's head, in place).
inline constexpr std::size_t kTraceparentSize = 55;
void write_traceparent(char* out, const SpanContext& context) noexcept;

// A tracestate header worth passing on, as W3C Trace Context defines one: at most 512
// characters (the length every vendor must propagate), 1 to 32 comma-separated `key=value`
// members (optional spaces around them, empty members ignored), each key unique and made of
// lowercase letters, digits and _ - * / (or "tenant@system"), each value printable ASCII
// without ',' or '=' and not ending in a space. Anything else is dropped rather than forwarded
// (the traceparent beside it is kept).
bool acceptable_tracestate(std::string_view header) noexcept;
// A baggage header worth passing on: at most 8192 bytes of printable ASCII (W3C Baggage limit).
bool acceptable_baggage(std::string_view header) noexcept;

// What a handler hands to the spans it starts and the requests it makes: the current span's
// context, the request's baggage (forwarded unchanged), and the rollout id when one is known
// (the span attribute `nemo.gym.rollout.id`).
struct TraceContext {
  SpanContext span;
  std::string baggage;
  std::string rollout_id;
};

// The rollout id of a row, upstream's rule for `nemo.gym.rollout.id`: `_ng_rollout_id` when it is
// a string, else "<_ng_task_index>-<_ng_rollout_index>" when both are integers; "-a<n>" is
// appended for an `_ng_attempt_index` n > 0. Empty when neither is there.
std::string rollout_id_of_row(const boost::json::object& row);

}  // namespace gym::telemetry
