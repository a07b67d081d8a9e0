#include "telemetry/traces/sampler.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "telemetry/common/env.h"

namespace gym::telemetry {

using core::ConfigError;

namespace {

constexpr std::array<std::pair<std::string_view, SamplerKind>, 6> kSamplers{{
    {"always_on", SamplerKind::always_on},
    {"always_off", SamplerKind::always_off},
    {"traceidratio", SamplerKind::traceidratio},
    {"parentbased_always_on", SamplerKind::parentbased_always_on},
    {"parentbased_always_off", SamplerKind::parentbased_always_off},
    {"parentbased_traceidratio", SamplerKind::parentbased_traceidratio},
}};

bool ratio_kept(double ratio, const TraceId& id) noexcept {
  if (ratio >= 1.0) return true;
  if (ratio <= 0.0) return false;
  std::uint64_t low = 0;
  for (std::size_t i = 8; i < 16; ++i) low = low << 8 | id[i];
  // The bound ratio * 2^64 as an integer: comparing in doubles would round ids near it.
  const double bound = std::ldexp(ratio, 64);
  if (bound >= 18446744073709551616.0) return true;
  return low < static_cast<std::uint64_t>(bound);
}

}  // namespace

bool Sampler::sample(const SpanContext* parent, const TraceId& trace_id) const noexcept {
  const bool has_parent = parent && parent->valid();
  switch (kind) {
    case SamplerKind::always_on:
      return true;
    case SamplerKind::always_off:
      return false;
    case SamplerKind::traceidratio:
      return ratio_kept(ratio, trace_id);
    case SamplerKind::parentbased_always_on:
      return has_parent ? parent->sampled : true;
    case SamplerKind::parentbased_always_off:
      return has_parent ? parent->sampled : false;
    case SamplerKind::parentbased_traceidratio:
      return has_parent ? parent->sampled : ratio_kept(ratio, trace_id);
  }
  return false;
}

Sampler resolve_sampler(const core::GetEnv& getenv) {
  Sampler s;
  if (auto e = first_env(getenv, {"OTEL_TRACES_SAMPLER"})) {
    std::string name = e->value;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    auto it = std::find_if(kSamplers.begin(), kSamplers.end(),
                           [&](const auto& p) { return p.first == name; });
    if (it == kSamplers.end())
      throw ConfigError(fmt::format(
          "config error: {}='{}' is not a sampler; valid values: always_on, always_off, "
          "traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio",
          e->name, e->value));
    s.kind = it->second;
  }
  const bool uses_ratio =
      s.kind == SamplerKind::traceidratio || s.kind == SamplerKind::parentbased_traceidratio;
  if (auto e = first_env(getenv, {"OTEL_TRACES_SAMPLER_ARG"}); e && uses_ratio) {
    double ratio = -1;
    const char* end = e->value.data() + e->value.size();
    auto [ptr, ec] = std::from_chars(e->value.data(), end, ratio);
    if (ec != std::errc() || ptr != end || !(ratio >= 0.0 && ratio <= 1.0))
      throw ConfigError(fmt::format(
          "config error: {}='{}' must be a sampling ratio between 0 and 1", e->name, e->value));
    s.ratio = ratio;
  }
  return s;
}

}  // namespace gym::telemetry
