#pragma once

namespace gym::core {

// Raises the soft RLIMIT_NOFILE to min(65535, hard limit) (docs/design/processes.md#spawning):
// servers, the orchestrator and collectors hold one descriptor per connection.
void raise_fd_limit();

}  // namespace gym::core
