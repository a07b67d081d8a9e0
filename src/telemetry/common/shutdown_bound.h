#pragma once
// The bound of a process's telemetry shutdown: every signal's last export, together
// (docs/design/telemetry-contract.md#export-and-failure-isolation).
#include <chrono>

namespace gym::telemetry {

inline constexpr std::chrono::milliseconds kShutdownBound{5000};

}  // namespace gym::telemetry
