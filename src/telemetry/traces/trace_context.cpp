#include "telemetry/traces/trace_context.h"

#include <algorithm>
#include <string>

#include <boost/json.hpp>
#include <cstring>
#include <utility>

namespace gym::telemetry {

namespace {

// The two lowercase hex digits of every byte value: one load per byte (every traced request
// writes 24 bytes of ids).
constexpr std::array<std::array<char, 2>, 256> kHexPairs = [] {
  constexpr char digits[] = "0123456789abcdef";
  std::array<std::array<char, 2>, 256> t{};
  for (std::size_t b = 0; b < 256; ++b) t[b] = {digits[b >> 4], digits[b & 0xf]};
  return t;
}();

// Unrolled: a load and a store per byte, no loop.
template <std::size_t N, std::size_t... I>
void write_hex(const std::array<std::uint8_t, N>& bytes, char* out,
               std::index_sequence<I...> /*bytes*/) noexcept {
  (std::memcpy(out + 2 * I, kHexPairs[bytes[I]].data(), 2), ...);
}
template <std::size_t N>
void write_hex(const std::array<std::uint8_t, N>& bytes, char* out) noexcept {
  write_hex(bytes, out, std::make_index_sequence<N>{});
}

template <std::size_t N>
std::string hex_of(const std::array<std::uint8_t, N>& bytes) {
  std::string out(2 * N, '0');
  write_hex(bytes, out.data());
  return out;
}

// The value of each lowercase hex digit, 0xff for every other byte (W3C: uppercase is invalid).
// A table: every request with a traceparent decodes 50 digits.
constexpr std::array<std::uint8_t, 256> kDigitValue = [] {
  std::array<std::uint8_t, 256> t{};
  t.fill(0xff);
  for (int c = '0'; c <= '9'; ++c)
    t[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c)
    t[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(c - 'a' + 10);
  return t;
}();

// The byte of the two digits at `text`; a non-digit sets high bits in `bad` (only 0xff has them).
inline std::uint8_t hex_pair(const char* text, std::uint8_t& bad) noexcept {
  const std::uint8_t hi = kDigitValue[static_cast<unsigned char>(text[0])];
  const std::uint8_t lo = kDigitValue[static_cast<unsigned char>(text[1])];
  bad |= (hi | lo) & 0xf0;
  return static_cast<std::uint8_t>(hi << 4 | lo);
}

// The 2N digits at `text` (the caller has checked they are there), unrolled.
template <std::size_t N, std::size_t... I>
bool read_hex(const char* text, std::array<std::uint8_t, N>& out,
              std::index_sequence<I...> /*bytes*/) noexcept {
  std::uint8_t bad = 0;
  ((out[I] = hex_pair(text + 2 * I, bad)), ...);
  return bad == 0;
}
template <std::size_t N>
bool read_hex(const char* text, std::array<std::uint8_t, N>& out) noexcept {
  return read_hex(text, out, std::make_index_sequence<N>{});
}

bool printable_ascii(std::string_view s) noexcept {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

}  // namespace

std::string to_hex(const TraceId& id) { return hex_of(id); }
std::string to_hex(const SpanId& id) { return hex_of(id); }

std::optional<SpanContext> parse_traceparent(std::string_view header) {
  // Optional whitespace around the value (HTTP field values).
  while (!header.empty() && (header.front() == ' ' || header.front() == '\t'))
    header.remove_prefix(1);
  while (!header.empty() && (header.back() == ' ' || header.back() == '\t'))
    header.remove_suffix(1);
  // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55.
  if (header.size() < 55) return std::nullopt;
  const char* p = header.data();
  std::array<std::uint8_t, 1> version{}, flags{};
  if (!read_hex(p, version) || version[0] == 0xff) return std::nullopt;
  if (p[2] != '-' || p[35] != '-' || p[52] != '-') return std::nullopt;
  // Version 00 is exactly 55 characters; a later version may append "-..." fields.
  if (header.size() > 55 && (version[0] == 0 || p[55] != '-')) return std::nullopt;
  SpanContext ctx;
  if (!read_hex(p + 3, ctx.trace_id) || !read_hex(p + 36, ctx.span_id) || !read_hex(p + 53, flags))
    return std::nullopt;
  if (!ctx.valid()) return std::nullopt;
  ctx.sampled = (flags[0] & 0x01) != 0;
  ctx.remote = true;
  return ctx;
}

void write_traceparent(char* out, const SpanContext& context) noexcept {
  std::memcpy(out, "00-", 3);
  write_hex(context.trace_id, out + 3);
  out[35] = '-';
  write_hex(context.span_id, out + 36);
  std::memcpy(out + 52, context.sampled ? "-01" : "-00", 3);
}

std::string format_traceparent(const SpanContext& context) {
  std::string out(kTraceparentSize, '0');
  write_traceparent(out.data(), context);
  return out;
}

namespace {

bool key_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*' ||
         c == '/';
}

// A list-member's key: "vendor", or "tenant@system" (multi-tenant). Lowercase letters, digits and
// _ - * /; the first character (of the system part too) a letter or, for a simple key or the
// tenant part, a digit.
bool tracestate_key(std::string_view key) noexcept {
  const auto part = [](std::string_view p, std::size_t max, bool digit_first) {
    if (p.empty() || p.size() > max) return false;
    const char c = p.front();
    if (!((c >= 'a' && c <= 'z') || (digit_first && c >= '0' && c <= '9'))) return false;
    return std::all_of(p.begin(), p.end(), key_char);
  };
  const auto at = key.find('@');
  if (at == std::string_view::npos) return part(key, 256, true);
  return part(key.substr(0, at), 241, true) && part(key.substr(at + 1), 14, false);
}

// A list-member's value: 1 to 256 printable ASCII characters other than ',' and '=', spaces
// allowed inside but not at the end.
bool tracestate_value(std::string_view value) noexcept {
  if (value.empty() || value.size() > 256 || value.back() == ' ') return false;
  return std::all_of(value.begin(), value.end(),
                     [](char c) { return c >= 0x20 && c <= 0x7e && c != ',' && c != '='; });
}

}  // namespace

bool acceptable_tracestate(std::string_view header) noexcept {
  if (header.empty() || header.size() > 512) return false;
  constexpr std::size_t kMaxMembers = 32;
  std::array<std::string_view, kMaxMembers> keys;
  std::size_t members = 0;
  for (std::size_t begin = 0; begin <= header.size();) {
    std::size_t end = header.find(',', begin);
    if (end == std::string_view::npos) end = header.size();
    std::string_view member = header.substr(begin, end - begin);
    begin = end + 1;
    // Optional whitespace around each member; an empty member is allowed and ignored.
    while (!member.empty() && (member.front() == ' ' || member.front() == '\t'))
      member.remove_prefix(1);
    while (!member.empty() && (member.back() == ' ' || member.back() == '\t'))
      member.remove_suffix(1);
    if (member.empty()) continue;
    const auto eq = member.find('=');
    if (eq == std::string_view::npos) return false;
    const std::string_view key = member.substr(0, eq);
    if (!tracestate_key(key) || !tracestate_value(member.substr(eq + 1))) return false;
    if (members == kMaxMembers) return false;
    // A key twice makes the whole header invalid.
    if (std::find(keys.begin(), keys.begin() + members, key) != keys.begin() + members)
      return false;
    keys[members++] = key;
  }
  return members > 0;
}

bool acceptable_baggage(std::string_view header) noexcept {
  return !header.empty() && header.size() <= 8192 && printable_ascii(header);
}

std::string rollout_id_of_row(const boost::json::object& row) {
  std::string id;
  if (const auto* explicit_id = row.if_contains("_ng_rollout_id");
      explicit_id && explicit_id->is_string()) {
    id = std::string(explicit_id->get_string());
  } else {
    const auto* task = row.if_contains("_ng_task_index");
    const auto* rollout = row.if_contains("_ng_rollout_index");
    if (!task || !rollout || !task->is_int64() || !rollout->is_int64()) return {};
    id = std::to_string(task->get_int64()) + "-" + std::to_string(rollout->get_int64());
  }
  if (const auto* attempt = row.if_contains("_ng_attempt_index");
      attempt && attempt->is_int64() && attempt->get_int64() > 0)
    id += "-a" + std::to_string(attempt->get_int64());
  return id;
}

}  // namespace gym::telemetry
