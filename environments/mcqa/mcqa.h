#pragma once
#include "servers/registry.h"

namespace gym::environments {

// MCQAResourcesServer (environments.md 5): multiple-choice answers; the letter is extracted
// from the response text by the row's (or the config's) grading mode.
void register_mcqa(servers::Registry& registry);

}  // namespace gym::environments
