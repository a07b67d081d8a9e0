#pragma once
// Test support, header-only: where NeMo Gym's conformance data lives. It is never copied into the
// project; tests read it where it is. Any test binary can include it (link gym_test_headers).
#include <cstdlib>
#include <string>

namespace gym::test {

// GYM_CONFORMANCE_DIR when set and not empty, else <source root>/../shared/data/conformance (the
// folder that holds <env>/example.jsonl and <env>/example_rollouts.jsonl).
inline std::string conformance_dir() {
  if (const char* dir = std::getenv("GYM_CONFORMANCE_DIR"); dir != nullptr && *dir != '\0')
    return dir;
  return std::string(GYM_SOURCE_ROOT) + "/../shared/data/conformance";
}

}  // namespace gym::test
