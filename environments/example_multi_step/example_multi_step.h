#pragma once
#include "servers/registry.h"

namespace gym::environments {

// ExampleMultiStepResourcesServer (environments.md 4): look up synonym values, then report them
// with extract_synonym_values; verify compares the last reported list with the expected one.
void register_example_multi_step(servers::Registry& registry);

}  // namespace gym::environments
