#pragma once
// Per-session state of a server, bounded: an entry expires after `ttl` without use, and beyond
// `capacity` entries the least recently used goes first. Session ids come from the clients
// (cookies), so without a bound anyone could grow a server's memory without limit by opening
// sessions. Not thread-safe: guard it with the state it holds.
#include <chrono>
#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gym::servers {

template <typename V>
class SessionTable {
 public:
  using Clock = std::chrono::steady_clock;

  explicit SessionTable(Clock::duration ttl = std::chrono::hours(1), std::size_t capacity = 100'000)
      : ttl_(ttl), capacity_(capacity == 0 ? 1 : capacity) {}

  // The value of `session`, if any and not expired; a hit counts as use.
  V* lookup(std::string_view session, Clock::time_point now) {
    evict(now);
    auto it = by_session_.find(session);
    if (it == by_session_.end()) return nullptr;
    touch(it->second, now);
    return &it->second->value;
  }
  std::optional<V> find(std::string_view session, Clock::time_point now) {
    V* v = lookup(session, now);
    return v ? std::optional<V>(*v) : std::nullopt;
  }

  // The value of `session`, inserted as `initial` when there is none (dict.setdefault).
  V& get_or_insert(std::string_view session, V initial, Clock::time_point now) {
    if (V* v = lookup(session, now)) return *v;
    lru_.push_front(Entry{std::string(session), std::move(initial), now});
    by_session_.emplace(lru_.front().session, lru_.begin());
    evict(now);  // never the entry just used: it is the most recent
    return lru_.front().value;
  }

  // Binds (or rebinds) `session` to `value`.
  void set(std::string_view session, V value, Clock::time_point now) {
    get_or_insert(session, value, now) = std::move(value);
  }

  std::size_t size() const { return by_session_.size(); }

 private:
  struct Entry {
    std::string session;
    V value;
    Clock::time_point last_used;
  };
  using List = std::list<Entry>;  // most recently used first

  void touch(typename List::iterator it, Clock::time_point now) {
    it->last_used = now;
    lru_.splice(lru_.begin(), lru_, it);
  }
  void evict(Clock::time_point now) {
    while (!lru_.empty() && (lru_.size() > capacity_ || now - lru_.back().last_used >= ttl_)) {
      by_session_.erase(lru_.back().session);
      lru_.pop_back();
    }
  }

  Clock::duration ttl_;
  std::size_t capacity_;
  List lru_;
  std::unordered_map<std::string_view, typename List::iterator> by_session_;  // keys view lru_
};

}  // namespace gym::servers
