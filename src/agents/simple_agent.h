#pragma once
#include "servers/registry.h"

namespace gym::agents {

// `simple_agent` (docs/design/wire-compatibility.md#the-agents-loop): seed, model turns with
// sequential tool calls, verify.
void register_simple_agent(servers::Registry& registry);

}  // namespace gym::agents
