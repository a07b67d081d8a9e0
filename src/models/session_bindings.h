#pragma once
// Which recorded row each replay session is bound to (docs/design/limits.md#sessions): entries
// expire after a period of inactivity and the least recently used is evicted beyond a capacity
// (servers/session_table.h). Not thread-safe: one instance per server event loop.
#include "servers/session_table.h"

#include <cstddef>

namespace gym::models {

class SessionBindings : public servers::SessionTable<std::size_t> {
 public:
  // A binding is a hint: one that expired is found again, so it is simply forgotten.
  explicit SessionBindings(Clock::duration ttl = std::chrono::hours(1),
                           std::size_t capacity = 100'000)
      : SessionTable(ttl, capacity, servers::EndedSessions::forget) {}
  // Binds (or rebinds) `session` to `row`.
  void bind(std::string_view session, std::size_t row, Clock::time_point now) {
    set(session, row, now);
  }
};

}  // namespace gym::models
