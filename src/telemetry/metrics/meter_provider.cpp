#include "telemetry/metrics/meter_provider.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace gym::telemetry {
namespace {

const char* kind_name(InstrumentKind k) {
  switch (k) {
    case InstrumentKind::counter:
      return "counter";
    case InstrumentKind::up_down_counter:
      return "up-down counter";
    case InstrumentKind::histogram:
      return "histogram";
    case InstrumentKind::gauge:
      return "gauge";
    case InstrumentKind::observable_counter:
      return "observable counter";
    case InstrumentKind::observable_gauge:
      return "observable gauge";
  }
  return "instrument";
}

std::string summary(const InstrumentDescriptor& d) {
  return fmt::format(
      "{} ({}, unit '{}', description '{}'{})", kind_name(d.kind),
      d.value_type == ValueType::int64 ? "int64" : "double", d.unit, d.description,
      d.bounds.empty() ? std::string() : fmt::format(", bounds [{}]", fmt::join(d.bounds, ", ")));
}

[[noreturn]] void reject(const InstrumentDescriptor& d, const std::string& problem) {
  throw std::invalid_argument(fmt::format("telemetry: instrument '{}': {}", d.name, problem));
}

bool is_observable(InstrumentKind k) {
  return k == InstrumentKind::observable_counter || k == InstrumentKind::observable_gauge;
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

InstrumentationScope gym_scope() { return {"gym-cpp", GYM_VERSION}; }

std::uint64_t unix_nano_now() noexcept {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

std::optional<std::size_t> check_instrument(const InstrumentDescriptor& d,
                                            std::span<const InstrumentDescriptor* const> existing) {
  const std::string& n = d.name;
  auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
           c == '/';
  };
  if (n.empty() || n.size() > 255 || !std::isalpha(static_cast<unsigned char>(n[0])) ||
      !std::all_of(n.begin(), n.end(), name_char)) {
    reject(d, "a name is a letter followed by at most 254 letters, digits, '_', '.', '-' or '/'");
  }
  if (d.unit.size() > 63 ||
      !std::all_of(d.unit.begin(), d.unit.end(), [](char c) { return c >= 0x20 && c < 0x7f; })) {
    reject(d, fmt::format("the unit '{}' must be at most 63 printable ASCII characters", d.unit));
  }
  if (d.description.size() > 1023) reject(d, "the description is longer than 1023 bytes");
  if (d.kind == InstrumentKind::histogram) {
    for (std::size_t i = 0; i < d.bounds.size(); ++i) {
      if (!std::isfinite(d.bounds[i])) reject(d, "histogram bounds must be finite");
      if (i > 0 && !(d.bounds[i - 1] < d.bounds[i])) {
        reject(d, fmt::format("histogram bounds must be strictly increasing; {} follows {}",
                              d.bounds[i], d.bounds[i - 1]));
      }
    }
  } else if (!d.bounds.empty()) {
    reject(d, "only histograms have bucket bounds");
  }
  for (std::size_t i = 0; i < existing.size(); ++i) {
    const InstrumentDescriptor& e = *existing[i];
    if (!same_name(e.name, d.name)) continue;
    if (is_observable(d.kind) || is_observable(e.kind)) {
      reject(d, fmt::format("already registered as {} '{}'; an observable instrument is "
                            "registered once, with its callback",
                            kind_name(e.kind), e.name));
    }
    if (e == d) return i;
    reject(d, fmt::format("already registered as {} '{}'; a second registration as {} conflicts",
                          summary(e), e.name, summary(d)));
  }
  return std::nullopt;
}

MeterProvider::MeterProvider(MeterProviderOptions options) : options_(std::move(options)) {}

MeterProvider::~MeterProvider() = default;

Histogram MeterProvider::create_histogram(std::string name, std::string unit,
                                          std::string description, std::vector<double> bounds) {
  InstrumentDescriptor d{std::move(name),           std::move(unit),    std::move(description),
                         InstrumentKind::histogram, ValueType::float64, std::move(bounds)};
  return Histogram(sync_storage<HistogramRule>(std::move(d)));
}

std::optional<std::size_t> MeterProvider::check(const InstrumentDescriptor& d) {
  std::vector<const InstrumentDescriptor*> existing;
  existing.reserve(seen_.size());
  for (const auto& s : seen_) existing.push_back(s.get());
  auto same = check_instrument(d, existing);
  if (!same) seen_.push_back(std::make_unique<InstrumentDescriptor>(d));
  return same;
}

MetricsSnapshot MeterProvider::collect() const {
  MetricsSnapshot snapshot{options_.resource, options_.scope, {}};
  if (!options_.enabled) return snapshot;
  std::lock_guard collecting(collect_mutex_);
  std::vector<InstrumentStorage*> list;
  {
    std::lock_guard lock(mutex_);
    list.reserve(instruments_.size());
    for (const auto& i : instruments_) list.push_back(i.get());
  }
  const std::uint64_t now = unix_nano_now();
  snapshot.metrics.reserve(list.size());
  for (auto* i : list) i->collect(now, snapshot.metrics);
  return snapshot;
}

}  // namespace gym::telemetry
