#pragma once
#include "servers/registry.h"

namespace gym::environments {

// SimpleWeatherResourcesServer (environments.md 2): one weather tool; verify always rewards 1.0.
void register_example_single_tool_call(servers::Registry& registry);

}  // namespace gym::environments
