#pragma once
// Per-session state of a server, bounded: an entry expires after `ttl` without use, and beyond
// `capacity` entries the least recently used goes first. Session ids come from the clients
// (cookies), so without a bound anyone could grow a server's memory without limit by opening
// sessions. Not thread-safe: guard it with the state it holds.
//
// A table of state (a counter a rollout built up) also remembers the sessions it let go, as many
// as it holds: a request of such a session fails with SessionEndedError instead of running on a
// fresh, empty state, which would verify the rollout against nothing. A table of hints (which
// replay row a session follows) just forgets: the hint is found again.
#include "http/router.h"

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <iterator>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gym::servers {

// A request of a session whose state the server let go (410 Gone: the client must start over).
class SessionEndedError : public http::StatusError {
 public:
  using http::StatusError::StatusError;
};

enum class EndedSessions {
  fail,    // state: using a session the table let go throws SessionEndedError
  forget,  // hints: such a session is simply unknown
};

template <typename V>
class SessionTable {
 public:
  using Clock = std::chrono::steady_clock;

  explicit SessionTable(Clock::duration ttl = std::chrono::hours(1), std::size_t capacity = 100'000,
                        EndedSessions ended = EndedSessions::fail)
      : ttl_(ttl), capacity_(capacity == 0 ? 1 : capacity), ended_mode_(ended) {}

  // The value of `session`, if any and not expired; a hit counts as use. Throws
  // SessionEndedError for a session the table let go (EndedSessions::fail).
  V* lookup(std::string_view session, Clock::time_point now) {
    evict(now);
    auto it = by_session_.find(session);
    if (it == by_session_.end()) {
      if (auto gone = ended_by_session_.find(session); gone != ended_by_session_.end())
        throw_ended(session, gone->second->for_capacity);
      return nullptr;
    }
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

  // Binds (or rebinds) `session` to `value`: the session starts over, even one the table had
  // let go (a rollout's seed).
  void set(std::string_view session, V value, Clock::time_point now) {
    start_over(session);
    get_or_insert(session, value, now) = std::move(value);
  }
  // get_or_insert for the first request of a rollout: a session the table had let go starts over.
  V& seed(std::string_view session, V initial, Clock::time_point now) {
    start_over(session);
    return get_or_insert(session, std::move(initial), now);
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
      if (ended_mode_ == EndedSessions::fail) remember_ended(lru_.size() > capacity_);
      by_session_.erase(lru_.back().session);
      lru_.pop_back();
    }
  }
  // Remembers the least recently used session as let go, at most `capacity_` of them (oldest
  // forgotten first), so the memory stays bounded.
  void remember_ended(bool for_capacity) {
    const std::string& session = lru_.back().session;
    if (ended_by_session_.contains(session)) return;
    ended_.push_back(Ended{session, for_capacity});
    ended_by_session_.emplace(ended_.back().session, std::prev(ended_.end()));
    if (ended_.size() > capacity_) {
      ended_by_session_.erase(ended_.front().session);
      ended_.pop_front();
    }
  }
  void start_over(std::string_view session) {
    auto it = ended_by_session_.find(session);
    if (it == ended_by_session_.end()) return;
    auto entry = it->second;
    ended_by_session_.erase(it);
    ended_.erase(entry);
  }
  [[noreturn]] void throw_ended(std::string_view session, bool for_capacity) const {
    char bound[64];
    if (for_capacity)
      std::snprintf(bound, sizeof bound, "session_state_max_sessions (%zu)", capacity_);
    else
      std::snprintf(bound, sizeof bound, "session_state_ttl_seconds (%g s)",
                    std::chrono::duration<double>(ttl_).count());
    throw SessionEndedError(
        410, "session " + std::string(session) +
                 (for_capacity ? " was dropped: more sessions were open in this server process "
                                 "than "
                               : " expired: it was not used for ") +
                 bound +
                 "; its state is gone and this request would run on a fresh, empty session. "
                 "Start the rollout over (a request without this session's cookie)");
  }

  struct Ended {
    std::string session;
    bool for_capacity;  // dropped as the least recently used, not expired
  };

  Clock::duration ttl_;
  std::size_t capacity_;
  EndedSessions ended_mode_;
  List lru_;
  std::unordered_map<std::string_view, typename List::iterator> by_session_;  // keys view lru_
  std::list<Ended> ended_;  // sessions let go, oldest first (EndedSessions::fail)
  std::unordered_map<std::string_view, typename std::list<Ended>::iterator> ended_by_session_;
};

}  // namespace gym::servers
