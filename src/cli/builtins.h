#pragma once
// The server implementations compiled into the gym binary. The CLI builds this registry and hands
// it to whatever validates configs or serves an instance; no library below cli knows the list.
#include "servers/registry.h"

namespace gym::cli {

const servers::Registry& builtin_registry();

}  // namespace gym::cli
