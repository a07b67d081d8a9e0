#pragma once
// `gym eval run [--no-serve]` (runtime.md 7, 9.4): expand the input, start the servers (or find a
// running deployment), collect, aggregate, shut down.
#include "core/config.h"

namespace gym::rollouts {

// Returns the exit code of runtime.md 9.5 (0, 1, 2, 3, 130, 143). Throws core::ConfigError for
// config and usage errors (exit 1, nothing started).
int run_eval(const core::ConfigSources& sources, bool no_serve);

}  // namespace gym::rollouts
