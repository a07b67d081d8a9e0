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
  EXPECT_EQ(t.find("a", t0 + 9s), 1);              // used: its clock restarts
  EXPECT_EQ(t.find("b", t0 + 10s), std::nullopt);  // not used for 10 s: gone
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
