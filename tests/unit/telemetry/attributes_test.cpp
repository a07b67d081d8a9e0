#include "telemetry/common/attributes.h"

#include <gtest/gtest.h>

#include <string>
#include <unordered_set>
#include <vector>

namespace gym::telemetry {
namespace {

TEST(AttributeSet, SortedByKeyAndOrderIndependent) {
  AttributeSet a{{"b", "x"}, {"a", std::int64_t{1}}};
  AttributeSet b{{"a", 1}, {"b", "x"}};
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].key, "a");
  EXPECT_EQ(a[1].key, "b");
}

TEST(AttributeSet, DuplicateKeysLastWins) {
  AttributeSet a{{"k", "first"}, {"other", true}, {"k", "last"}};
  ASSERT_EQ(a.size(), 2u);
  ASSERT_NE(a.find("k"), nullptr);
  EXPECT_EQ(std::get<std::string>(*a.find("k")), "last");
  EXPECT_EQ(a, (AttributeSet{{"other", true}, {"k", "last"}}));
}

TEST(AttributeSet, ValueTypesAreDistinct) {
  AttributeSet as_int{{"k", 1}};
  AttributeSet as_double{{"k", 1.0}};
  AttributeSet as_string{{"k", "1"}};
  AttributeSet as_bool{{"k", true}};
  EXPECT_NE(as_int, as_double);
  EXPECT_NE(as_int, as_string);
  EXPECT_NE(as_int, as_bool);
  EXPECT_NE(as_double, as_string);
  EXPECT_TRUE(std::holds_alternative<std::string>(*as_string.find("k")));  // not bool
  EXPECT_TRUE(std::holds_alternative<std::int64_t>(*as_int.find("k")));
  EXPECT_TRUE(std::holds_alternative<bool>(*as_bool.find("k")));
}

TEST(AttributeSet, ValuesFromEveryStringKind) {
  std::string owned = "v";
  std::string_view view = owned;
  AttributeSet a{{"k", owned}};
  AttributeSet b{{"k", view}};
  AttributeSet c{{"k", "v"}};
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
  AttributeSet narrow{{"k", std::uint16_t{7}}, {"f", 0.5f}};
  EXPECT_EQ(std::get<std::int64_t>(*narrow.find("k")), 7);
  EXPECT_EQ(std::get<double>(*narrow.find("f")), 0.5);
}

TEST(AttributeSet, NegativeZeroEqualsZero) {
  AttributeSet a{{"k", 0.0}};
  AttributeSet b{{"k", -0.0}};
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
}

TEST(AttributeSet, EmptySetsAreEqual) {
  AttributeSet a;
  AttributeSet b{};
  std::vector<AttributeView> none;
  SortedAttributes c(none);
  EXPECT_EQ(a, b);
  EXPECT_TRUE(a == c);
  EXPECT_EQ(a.hash(), c.hash());
}

TEST(SortedAttributes, MatchesTheOwnedSet) {
  AttributeSet owned{{"method", "GET"}, {"status", 200}, {"route", "/run"}};
  std::vector<AttributeView> list{{"status", 200}, {"route", "/run"}, {"method", "GET"}};
  SortedAttributes sorted(list);
  EXPECT_EQ(sorted.hash(), owned.hash());
  EXPECT_TRUE(owned == sorted);
  std::vector<AttributeView> other{{"status", 201}, {"route", "/run"}, {"method", "GET"}};
  EXPECT_FALSE(owned == SortedAttributes(other));
  EXPECT_EQ(AttributeSet(sorted), owned);
}

TEST(SortedAttributes, LongListsSpill) {
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) keys.push_back("key" + std::to_string(39 - i));
  std::vector<AttributeView> list;
  for (const auto& k : keys) list.emplace_back(k, static_cast<std::int64_t>(k.size()));
  SortedAttributes sorted(list);
  ASSERT_EQ(sorted.size(), 40u);
  for (std::size_t i = 1; i < sorted.size(); ++i) EXPECT_LT(sorted[i - 1].key, sorted[i].key);
  AttributeSet owned(list);
  EXPECT_TRUE(owned == sorted);
}

TEST(AttributeSetHash, HeterogeneousLookupInStandardContainers) {
  std::unordered_set<AttributeSet, AttributeSetHash, AttributeSetEqual> seen;
  seen.insert(AttributeSet{{"a", "x"}, {"b", 2}});
  std::vector<AttributeView> probe{{"b", 2}, {"a", "x"}};
  EXPECT_NE(seen.find(SortedAttributes(probe)), seen.end());
  std::vector<AttributeView> missing{{"b", 3}, {"a", "x"}};
  EXPECT_EQ(seen.find(SortedAttributes(missing)), seen.end());
}

}  // namespace
}  // namespace gym::telemetry
