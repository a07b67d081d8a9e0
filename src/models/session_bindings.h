#pragma once
// Which recorded row each replay session is bound to (environments.md 8.4 step 3): entries
// expire after a period of inactivity and the least recently used is evicted beyond a capacity.
// Not thread-safe: one instance per server event loop.
#include <chrono>
#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gym::models {

class SessionBindings {
 public:
  using Clock = std::chrono::steady_clock;

  explicit SessionBindings(Clock::duration ttl = std::chrono::hours(1),
                           std::size_t capacity = 100'000);

  // The row bound to `session`, if any and not expired; a hit counts as activity.
  std::optional<std::size_t> find(std::string_view session, Clock::time_point now);
  // Binds (or rebinds) `session` to `row`, evicting expired and excess entries.
  void bind(std::string_view session, std::size_t row, Clock::time_point now);
  std::size_t size() const { return by_session_.size(); }

 private:
  struct Entry {
    std::string session;
    std::size_t row;
    Clock::time_point last_used;
  };
  using List = std::list<Entry>;  // most recently used first

  void evict(Clock::time_point now);

  Clock::duration ttl_;
  std::size_t capacity_;
  List lru_;
  std::unordered_map<std::string_view, List::iterator> by_session_;  // keys view lru_ entries
};

}  // namespace gym::models
