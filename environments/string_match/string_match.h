#pragma once
#include "servers/registry.h"

namespace gym::environments {

// StringMatchResourcesServer (environments.md 7): extracts a free-form answer from the
// assistant text (boxed, final answer, last line or the whole text) and grades it against
// `expected_answer` with NeMo RL's normalising string match (rewards 0.0, 0.98 or 1.0).
void register_string_match(servers::Registry& registry);

}  // namespace gym::environments
