#pragma once
#include "servers/registry.h"

namespace gym::environments {

// StatefulCounterResourcesServer (environments.md 3): a counter per session, seeded from the
// row's `initial_count`, changed by the tools; verify rewards 1.0 when it equals
// `expected_count`. State is per process: serve it with num_workers <= 1.
void register_example_session_state_mgmt(servers::Registry& registry);

}  // namespace gym::environments
