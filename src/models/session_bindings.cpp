#include "models/session_bindings.h"

namespace gym::models {

SessionBindings::SessionBindings(Clock::duration ttl, std::size_t capacity)
    : ttl_(ttl), capacity_(capacity == 0 ? 1 : capacity) {}

std::optional<std::size_t> SessionBindings::find(std::string_view session, Clock::time_point now) {
  evict(now);
  auto it = by_session_.find(session);
  if (it == by_session_.end()) return std::nullopt;
  it->second->last_used = now;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->row;
}

void SessionBindings::bind(std::string_view session, std::size_t row, Clock::time_point now) {
  if (auto it = by_session_.find(session); it != by_session_.end()) {
    it->second->row = row;
    it->second->last_used = now;
    lru_.splice(lru_.begin(), lru_, it->second);
  } else {
    lru_.push_front(Entry{std::string(session), row, now});
    by_session_.emplace(lru_.front().session, lru_.begin());
  }
  evict(now);
}

void SessionBindings::evict(Clock::time_point now) {
  while (!lru_.empty() && (lru_.size() > capacity_ || now - lru_.back().last_used >= ttl_)) {
    by_session_.erase(lru_.back().session);
    lru_.pop_back();
  }
}

}  // namespace gym::models
