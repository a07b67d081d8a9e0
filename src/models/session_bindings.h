#pragma once
// Which recorded row each replay session is bound to (environments.md 8.4 step 3): entries
// expire after a period of inactivity and the least recently used is evicted beyond a capacity
// (servers/session_table.h). Not thread-safe: one instance per server event loop.
#include "servers/session_table.h"

#include <cstddef>

namespace gym::models {

class SessionBindings : public servers::SessionTable<std::size_t> {
 public:
  using servers::SessionTable<std::size_t>::SessionTable;
  // Binds (or rebinds) `session` to `row`.
  void bind(std::string_view session, std::size_t row, Clock::time_point now) {
    set(session, row, now);
  }
};

}  // namespace gym::models
