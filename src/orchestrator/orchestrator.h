#pragma once
// `gym env start` and `gym env status` (runtime.md 3, 9.2, 9.3).
#include "core/config.h"

namespace gym::orchestrator {

// Merges the config, assigns ports, starts the head server and one process per server
// instance, waits for readiness, supervises until SIGINT/SIGTERM or a server exits, then shuts
// everything down. Returns the exit code of runtime.md 9.5.
int run_env_start(const core::ConfigSources& sources);

// Lists the servers of a running deployment from its head server and probes each one.
int run_env_status(const core::ConfigSources& sources, bool json);

}  // namespace gym::orchestrator
