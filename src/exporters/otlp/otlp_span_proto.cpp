#include "exporters/otlp/otlp_span_proto.h"

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace gym::exporters {
namespace {

using telemetry::AttributeValue;

// ---- the wire format (protobuf encoding: varints, fixed64/fixed32, length-delimited) ----

enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

constexpr std::size_t varint_size(std::uint64_t v) noexcept {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
constexpr std::size_t tag_size(std::uint32_t field) noexcept { return varint_size(field << 3); }
// A length-delimited field whose payload is `n` bytes.
constexpr std::size_t length_field_size(std::uint32_t field, std::size_t n) noexcept {
  return tag_size(field) + varint_size(n) + n;
}

// Writes into a buffer sized beforehand by the *_size functions below (which must agree).
class Writer {
 public:
  explicit Writer(char* at) : p_(at) {}
  char* at() const noexcept { return p_; }

  void varint(std::uint64_t v) noexcept {
    while (v >= 0x80) {
      *p_++ = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    *p_++ = static_cast<char>(v);
  }
  void tag(std::uint32_t field, WireType type) noexcept { varint((field << 3) | type); }
  void length(std::uint32_t field, std::size_t n) noexcept {
    tag(field, kLength);
    varint(n);
  }
  void bytes(std::uint32_t field, const void* data, std::size_t n) noexcept {
    length(field, n);
    copy(static_cast<const char*>(data), n);
  }
  // An id: its size is known here, so the copy is a few moves, not a call.
  template <std::size_t N>
  void id(std::uint32_t field, const std::array<std::uint8_t, N>& bytes) noexcept {
    tag(field, kLength);
    *p_++ = static_cast<char>(N);
    std::memcpy(p_, bytes.data(), N);
    p_ += N;
  }
  void string(std::uint32_t field, std::string_view s) noexcept {
    bytes(field, s.data(), s.size());
  }
  void fixed64(std::uint32_t field, std::uint64_t v) noexcept {
    tag(field, kFixed64);
    little_endian(v, 8);
  }
  void fixed32(std::uint32_t field, std::uint32_t v) noexcept {
    tag(field, kFixed32);
    little_endian(v, 4);
  }

 private:
  // Keys and most values are 4 to 32 bytes: two overlapping fixed-size moves each, rather than a
  // call to memcpy (a span has a dozen such strings).
  void copy(const char* s, std::size_t n) noexcept {
    if (n >= 16 && n <= 32) {
      overlapping<16>(s, n);
    } else if (n >= 8 && n < 16) {
      overlapping<8>(s, n);
    } else if (n >= 4 && n < 8) {
      overlapping<4>(s, n);
    } else {
      std::memcpy(p_, s, n);
    }
    p_ += n;
  }
  // The first and the last K of the n >= K bytes (the buffers are distinct).
  template <std::size_t K>
  void overlapping(const char* s, std::size_t n) noexcept {
    std::memcpy(p_, s, K);
    std::memcpy(p_ + n - K, s + n - K, K);
  }
  // One store on a little-endian machine (every span has two fixed64 and a fixed32).
  void little_endian(std::uint64_t v, int n) noexcept {
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(p_, &v, static_cast<std::size_t>(n));
      p_ += n;
    } else {
      for (int i = 0; i < n; ++i) *p_++ = static_cast<char>(v >> (8 * i));
    }
  }
  char* p_;
};

// ---- common.proto: AnyValue {string 1, bool 2, int 3, double 4}, KeyValue {key 1, value 2} ----
// (get_if after the index switch: the unchecked access, on the path that runs for every value;
// always inlined: a call per attribute and pass cost more than the switch)

[[gnu::always_inline]] inline std::size_t any_value_size(const AttributeValue& v) noexcept {
  switch (v.index()) {
    case 0:
      return length_field_size(1, std::get_if<std::string>(&v)->size());
    case 1:
      return 2;
    case 2:
      return 1 + varint_size(static_cast<std::uint64_t>(*std::get_if<std::int64_t>(&v)));
    default:
      return 9;
  }
}

[[gnu::always_inline]] inline void write_any_value(Writer& w, const AttributeValue& v) noexcept {
  switch (v.index()) {
    case 0:
      w.string(1, *std::get_if<std::string>(&v));
      break;
    case 1:
      w.tag(2, kVarint);
      w.varint(*std::get_if<bool>(&v) ? 1 : 0);
      break;
    case 2:
      w.tag(3, kVarint);
      w.varint(static_cast<std::uint64_t>(*std::get_if<std::int64_t>(&v)));
      break;
    default: {
      std::uint64_t bits;
      const double d = *std::get_if<double>(&v);
      std::memcpy(&bits, &d, sizeof bits);
      w.fixed64(4, bits);
      break;
    }
  }
}

template <class Attribute>
std::size_t key_value_size(const Attribute& a, std::size_t value_size) noexcept {
  const std::string_view key = a.key;
  return (key.empty() ? 0 : length_field_size(1, key.size())) + length_field_size(2, value_size);
}

// Each attribute as field `field` of the enclosing message. The sizing pass records each value's
// size in `sizes` (when given) and the writing pass reads them back in the same order, so a value
// is sized once.
template <class Attributes>
std::size_t attributes_size(std::uint32_t field, const Attributes& attributes,
                            std::vector<std::size_t>* sizes = nullptr) {
  std::size_t n = 0;
  for (const auto& a : attributes) {
    const std::size_t value_size = any_value_size(a.value);
    if (sizes) sizes->push_back(value_size);
    n += length_field_size(field, key_value_size(a, value_size));
  }
  return n;
}

template <class Attributes>
void write_attributes(Writer& w, std::uint32_t field, const Attributes& attributes,
                      const std::size_t** sizes = nullptr) noexcept {
  for (const auto& a : attributes) {
    const std::size_t value_size = sizes ? *(*sizes)++ : any_value_size(a.value);
    w.length(field, key_value_size(a, value_size));
    const std::string_view key = a.key;
    if (!key.empty()) w.string(1, key);
    w.length(2, value_size);
    write_any_value(w, a.value);
  }
}

// ---- trace.proto: Span, Span.Event, Status ----

bool has_status(const telemetry::SpanData& s) noexcept {
  return s.status != telemetry::StatusCode::unset || !s.status_message.empty();
}

std::size_t status_size(const telemetry::SpanData& s) noexcept {
  return (s.status_message.empty() ? 0 : length_field_size(2, s.status_message.size())) +
         (s.status == telemetry::StatusCode::unset ? 0
                                                   : 1 + varint_size(static_cast<int>(s.status)));
}

std::size_t event_size(const telemetry::SpanEvent& e, std::vector<std::size_t>* sizes = nullptr) {
  return (e.time_unix_nano ? 9 : 0) + (e.name.empty() ? 0 : length_field_size(2, e.name.size())) +
         attributes_size(3, e.attributes, sizes);
}

std::size_t span_size(const telemetry::SpanData& s, std::vector<std::size_t>& sizes) {
  std::size_t n = length_field_size(1, s.trace_id.size()) + length_field_size(2, s.span_id.size());
  if (!s.trace_state.empty()) n += length_field_size(3, s.trace_state.size());
  if (!telemetry::is_zero(s.parent_span_id)) n += length_field_size(4, s.parent_span_id.size());
  if (!s.name.empty()) n += length_field_size(5, s.name.size());
  if (s.kind != telemetry::SpanKind{}) n += 1 + varint_size(static_cast<int>(s.kind));
  if (s.start_time_unix_nano) n += 9;
  if (s.end_time_unix_nano) n += 9;
  n += attributes_size(9, s.attributes, &sizes);
  for (const auto& e : s.events) n += length_field_size(11, event_size(e, &sizes));
  if (has_status(s)) n += length_field_size(15, status_size(s));
  if (s.sampled) n += tag_size(16) + 4;
  return n;
}

void write_span(Writer& w, const telemetry::SpanData& s, std::size_t size,
                const std::size_t** sizes) noexcept {
  w.length(2, size);  // ScopeSpans.spans
  w.id(1, s.trace_id);
  w.id(2, s.span_id);
  if (!s.trace_state.empty()) w.string(3, s.trace_state);
  if (!telemetry::is_zero(s.parent_span_id)) w.id(4, s.parent_span_id);
  if (!s.name.empty()) w.string(5, s.name);
  if (s.kind != telemetry::SpanKind{}) {
    w.tag(6, kVarint);
    w.varint(static_cast<std::uint64_t>(s.kind));
  }
  if (s.start_time_unix_nano) w.fixed64(7, s.start_time_unix_nano);
  if (s.end_time_unix_nano) w.fixed64(8, s.end_time_unix_nano);
  write_attributes(w, 9, s.attributes, sizes);
  for (const auto& e : s.events) {
    w.length(11, event_size(e));  // events are rare (exceptions): sized again here
    if (e.time_unix_nano) w.fixed64(1, e.time_unix_nano);
    if (!e.name.empty()) w.string(2, e.name);
    write_attributes(w, 3, e.attributes, sizes);
  }
  if (has_status(s)) {
    w.length(15, status_size(s));
    if (!s.status_message.empty()) w.string(2, s.status_message);
    if (s.status != telemetry::StatusCode::unset) {
      w.tag(3, kVarint);
      w.varint(static_cast<std::uint64_t>(s.status));
    }
  }
  if (s.sampled) w.fixed32(16, 1);  // flags: the W3C sampled bit
}

std::size_t scope_size(const telemetry::InstrumentationScope& scope) noexcept {
  return (scope.name.empty() ? 0 : length_field_size(1, scope.name.size())) +
         (scope.version.empty() ? 0 : length_field_size(2, scope.version.size()));
}

}  // namespace

std::string encode_spans_protobuf(const telemetry::Resource& resource,
                                  const telemetry::InstrumentationScope& scope,
                                  telemetry::SpanBatch spans) {
  // Sizes inside out: spans, ScopeSpans, Resource, ResourceSpans, the request.
  std::vector<std::size_t> span_sizes, value_sizes;
  span_sizes.reserve(spans.size());
  value_sizes.reserve(spans.size() * 6);
  std::size_t scope_spans = length_field_size(1, scope_size(scope));
  for (const auto& s : spans) {
    span_sizes.push_back(span_size(*s, value_sizes));
    scope_spans += length_field_size(2, span_sizes.back());
  }
  const std::size_t resource_body = attributes_size(1, resource.attributes);
  const std::size_t resource_spans =
      length_field_size(1, resource_body) + length_field_size(2, scope_spans);
  const std::size_t total = length_field_size(1, resource_spans);

  std::string out(total, '\0');
  Writer w(out.data());
  w.length(1, resource_spans);  // ExportTraceServiceRequest.resource_spans
  w.length(1, resource_body);   // ResourceSpans.resource
  write_attributes(w, 1, resource.attributes);
  w.length(2, scope_spans);  // ResourceSpans.scope_spans
  w.length(1, scope_size(scope));
  if (!scope.name.empty()) w.string(1, scope.name);
  if (!scope.version.empty()) w.string(2, scope.version);
  const std::size_t* next_value_size = value_sizes.data();
  for (std::size_t i = 0; i < spans.size(); ++i)
    write_span(w, *spans[i], span_sizes[i], &next_value_size);
  if (w.at() != out.data() + out.size())
    throw std::logic_error("encode_spans_protobuf: sizes and bytes written disagree");
  return out;
}

}  // namespace gym::exporters
