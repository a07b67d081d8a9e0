#pragma once

namespace gym::core {

// Sends spdlog's default logger to stderr ("2025-01-01 12:00:00.000 info message"), at info
// level, or debug when `verbose`. Stdout stays free for command output (--json).
void init_logging(bool verbose);

}  // namespace gym::core
