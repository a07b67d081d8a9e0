#pragma once
#include "servers/registry.h"

namespace gym::environments {

// XlamFcResourcesServer (environments.md 6): function-calling accuracy. No tool routes (every
// call gets 404); verify matches the response's function calls against `expected_answers`.
void register_xlam_fc(servers::Registry& registry);

}  // namespace gym::environments
