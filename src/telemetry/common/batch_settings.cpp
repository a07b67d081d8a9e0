#include "telemetry/common/batch_settings.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "telemetry/common/env.h"

namespace gym::telemetry {
using core::ConfigError;

BatchSettings resolve_batch_settings(const GetEnv& getenv, std::string_view prefix,
                                     BatchSettings b) {
  auto name = [&](std::string_view what) { return fmt::format("{}_{}", prefix, what); };
  auto count = [](const EnvValue& e) {
    auto v = parse_number<std::int64_t>(e.value);
    if (!v || *v <= 0)
      throw ConfigError(
          fmt::format("config error: {}='{}' must be a positive whole number", e.name, e.value));
    return static_cast<std::size_t>(*v);
  };
  const std::string queue = name("MAX_QUEUE_SIZE"), batch = name("MAX_EXPORT_BATCH_SIZE"),
                    delay = name("SCHEDULE_DELAY"), timeout = name("EXPORT_TIMEOUT");
  if (auto e = first_env(getenv, {queue})) b.max_queue_size = count(*e);
  if (auto e = first_env(getenv, {batch})) {
    b.max_export_batch_size = count(*e);
    if (b.max_export_batch_size > b.max_queue_size)
      throw ConfigError(fmt::format("config error: {}={} must not exceed the queue size ({}, {})",
                                    e->name, e->value, b.max_queue_size, queue));
  }
  b.max_export_batch_size = std::min(b.max_export_batch_size, b.max_queue_size);
  if (auto e = first_env(getenv, {delay})) b.schedule_delay = parse_positive_ms(*e);
  if (auto e = first_env(getenv, {timeout})) b.export_timeout = parse_positive_ms(*e);
  return b;
}

}  // namespace gym::telemetry
