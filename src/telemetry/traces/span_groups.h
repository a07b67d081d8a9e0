#pragma once
// Span groups (docs/reference/telemetry.md#reference): which kinds of span a process records. The
// tracer's gate is one bit test (SpanGroups::has), so an unrecorded group costs a branch.
#include <bitset>
#include <cstddef>
#include <string_view>

namespace gym::telemetry {

enum class SpanGroup { job, server, http_client, rollout, agent, model_call, verify, sandbox };
inline constexpr std::size_t kSpanGroupCount = 8;

class SpanGroups {
 public:
  bool has(SpanGroup g) const noexcept { return bits_.test(static_cast<std::size_t>(g)); }
  void add(SpanGroup g) noexcept { bits_.set(static_cast<std::size_t>(g)); }
  bool none() const noexcept { return bits_.none(); }
  friend bool operator==(const SpanGroups&, const SpanGroups&) = default;

 private:
  std::bitset<kSpanGroupCount> bits_;
};

// Splits `spec` on ',', trims, lower-cases and drops empty parts; a preset contributes its
// groups. An unknown name is a core::ConfigError naming it, `source` (a variable name or
// `telemetry.span_groups`) and the sorted list of valid names (a typo must not silently turn spans
// off).
SpanGroups resolve_span_groups(std::string_view spec, std::string_view source);

}  // namespace gym::telemetry
