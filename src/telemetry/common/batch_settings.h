#pragma once
// The settings of a batch processor (docs/design/limits.md#telemetry): OTEL_BSP_* for spans,
// OTEL_BLRP_* for log records, each <PREFIX>_MAX_QUEUE_SIZE, _MAX_EXPORT_BATCH_SIZE,
// _SCHEDULE_DELAY (ms) and _EXPORT_TIMEOUT (ms).
#include <chrono>
#include <cstddef>
#include <string_view>

#include "core/config.h"

namespace gym::telemetry {

struct BatchSettings {
  std::size_t max_queue_size = 2048;
  std::size_t max_export_batch_size = 512;
  std::chrono::milliseconds schedule_delay{5'000};
  std::chrono::milliseconds export_timeout{30'000};
};

// `defaults` overridden by the <prefix>_* variables: positive whole numbers; a batch larger than
// the queue is a core::ConfigError naming the variable, as is any other invalid value.
BatchSettings resolve_batch_settings(const core::GetEnv& getenv, std::string_view prefix,
                                     BatchSettings defaults);

}  // namespace gym::telemetry
