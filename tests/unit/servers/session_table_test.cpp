// Per-session state stays bounded (issue 13 item 9): expiry after inactivity, least recently used
// out beyond the capacity, and the limits read from the config.
#include "servers/session_table.h"
#include "servers/registry.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <string>

namespace {

using Table = gym::servers::SessionTable<long>;
using namespace std::chrono_literals;

TEST(SessionTable, ExpiresAfterInactivityAndAHitCountsAsUse) {
  Table t(10s, 100);
  const auto t0 = Table::Clock::time_point{};
  t.get_or_insert("a", 1, t0);
  t.get_or_insert("b", 2, t0);
  EXPECT_EQ(t.find("a", t0 + 9s), 1);  // used: its clock restarts
  // Not used for 10 s: gone, and said so.
  EXPECT_THROW(t.find("b", t0 + 10s), gym::servers::SessionEndedError);
  EXPECT_EQ(t.find("a", t0 + 18s), 1);
  EXPECT_EQ(t.size(), 1u);
}

TEST(SessionTable, ManySessionsKeepOnlyTheMostRecentCapacity) {
  Table t(1h, 1000);
  const auto t0 = Table::Clock::time_point{};
  for (long i = 0; i < 20'000; ++i) t.get_or_insert("session-" + std::to_string(i), i, t0);
  EXPECT_EQ(t.size(), 1000u);
  EXPECT_EQ(t.find("session-19999", t0), 19999);
  EXPECT_EQ(t.find("session-0", t0), std::nullopt);
  // get_or_insert leaves an existing value as it is (dict.setdefault); set replaces it.
  EXPECT_EQ(t.get_or_insert("session-19999", -1, t0), 19999);
  t.set("session-19999", 7, t0);
  EXPECT_EQ(t.find("session-19999", t0), 7);
}

// A session the table let go fails instead of reading as new (issue 28 item 10), for as many
// ended sessions as the table holds; `seed` and `set` start one over; a table of hints forgets.
TEST(SessionTable, AnEndedSessionFailsUntilItIsStartedOver) {
  Table t(10s, 2);
  const auto t0 = Table::Clock::time_point{};
  t.get_or_insert("idle", 1, t0);
  EXPECT_EQ(t.find("never-seen", t0 + 11s), std::nullopt);
  try {
    t.find("idle", t0 + 11s);
    ADD_FAILURE() << "an expired session read as new";
  } catch (const gym::servers::SessionEndedError& e) {
    EXPECT_EQ(e.status(), 410);
    EXPECT_NE(std::string(e.what()).find("session idle expired"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("session_state_ttl_seconds (10 s)"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(t.get_or_insert("idle", 0, t0 + 12s), gym::servers::SessionEndedError);
  EXPECT_EQ(t.seed("idle", 5, t0 + 12s), 5);
  EXPECT_EQ(t.find("idle", t0 + 12s), 5);

  // Dropped for the capacity: said so.
  t.get_or_insert("b", 2, t0 + 13s);
  t.get_or_insert("c", 3, t0 + 14s);  // "idle" is the least recently used of three
  try {
    t.find("idle", t0 + 14s);
    ADD_FAILURE() << "a dropped session read as new";
  } catch (const gym::servers::SessionEndedError& e) {
    EXPECT_NE(std::string(e.what()).find("session_state_max_sessions (2)"), std::string::npos)
        << e.what();
  }
  t.set("idle", 9, t0 + 15s);
  EXPECT_EQ(t.find("idle", t0 + 15s), 9);

  // The ended sessions it remembers are bounded by the capacity: the oldest is forgotten.
  Table bounded(1s, 2);
  for (long i = 0; i < 1000; ++i) bounded.get_or_insert("s" + std::to_string(i), i, t0);
  EXPECT_EQ(bounded.find("s0", t0), std::nullopt);  // forgotten: unknown again
  EXPECT_THROW(bounded.find("s997", t0), gym::servers::SessionEndedError);

  Table hints(10s, 2, gym::servers::EndedSessions::forget);
  hints.get_or_insert("idle", 1, t0);
  EXPECT_EQ(hints.find("idle", t0 + 11s), std::nullopt);
}

TEST(SessionLimits, FromConfigWithDefaults) {
  auto defaults = gym::servers::SessionLimits::from_config({});
  EXPECT_EQ(defaults.capacity, 100'000u);
  EXPECT_EQ(defaults.ttl, std::chrono::hours(1));
  auto set = gym::servers::SessionLimits::from_config(
      boost::json::parse(R"({"session_state_ttl_seconds": 30, "session_state_max_sessions": 5})")
          .as_object());
  EXPECT_EQ(set.capacity, 5u);
  EXPECT_EQ(set.ttl, std::chrono::seconds(30));
  EXPECT_THROW(gym::servers::SessionLimits::from_config(
                   boost::json::parse(R"({"session_state_max_sessions": 0})").as_object()),
               gym::core::ConfigError);
}

}  // namespace
