// Equality of JSON values under both boolean rules, and the canonical text that agrees with
// BoolRule::distinct (BoolRule::as_integers for Python's ==, distinct for the replay model). The
// BoolRule::as_integers expectations were checked against CPython 3.12's ==.
#include "python_compat/json_equal.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <cmath>
#include <cstdint>
#include <string_view>

namespace json = boost::json;
using gym::python_compat::BoolRule;
using gym::python_compat::canonical_json;
using gym::python_compat::json_equal;

namespace {

constexpr BoolRule kBothRules[] = {BoolRule::distinct, BoolRule::as_integers};

// Both orders under `rule`; under BoolRule::distinct the canonical texts must agree too.
void expect_values_equal(const json::value& a, const json::value& b, BoolRule rule, bool equal) {
  bool python = rule == BoolRule::as_integers;
  EXPECT_EQ(json_equal(a, b, rule), equal) << a << " vs " << b << (python ? " (Python)" : "");
  EXPECT_EQ(json_equal(b, a, rule), equal) << b << " vs " << a << (python ? " (Python)" : "");
  if (rule == BoolRule::distinct) {
    EXPECT_EQ(canonical_json(a) == canonical_json(b), equal)
        << canonical_json(a) << " vs " << canonical_json(b);
  }
}

// The same for two JSON texts.
void expect_equal(std::string_view a, std::string_view b, BoolRule rule, bool equal) {
  expect_values_equal(json::parse(a), json::parse(b), rule, equal);
}

// The same answer under both rules: no boolean meets a number.
void expect_equal_by_both_rules(std::string_view a, std::string_view b, bool equal) {
  for (auto rule : kBothRules) expect_equal(a, b, rule, equal);
}

}  // namespace

TEST(JsonEqual, NumbersCompareByExactValue) {
  expect_equal_by_both_rules("1", "1.0", true);
  expect_equal_by_both_rules("-3", "-3.0", true);
  expect_equal_by_both_rules("0", "-0.0", true);
  expect_equal_by_both_rules("0.1", "0.1", true);
  expect_equal_by_both_rules("1", "1.5", false);
  // 2**53 + 1 != 2.0**53
  expect_equal_by_both_rules("9007199254740993", "9007199254740992.0", false);
  expect_equal_by_both_rules("18446744073709551615", "18446744073709551615", true);
  for (auto rule : kBothRules) {
    expect_values_equal(json::value(std::uint64_t{5}), json::value(5), rule, true);
    // 2**64 - 1 != 2.0**64
    expect_values_equal(json::value(std::uint64_t{18446744073709551615ull}),
                        json::value(18446744073709551616.0), rule, false);
    expect_values_equal(json::value(std::uint64_t{18446744073709551615ull}), json::value(-1), rule,
                        false);
    EXPECT_FALSE(json_equal(json::value(NAN), json::value(NAN), rule));
    EXPECT_FALSE(json_equal(json::value(NAN), json::value(0), rule));
  }
}

TEST(JsonEqual, KindsNeverMix) {
  expect_equal_by_both_rules(R"("14")", "14", false);
  expect_equal_by_both_rules(R"("true")", "true", false);
  expect_equal_by_both_rules("null", "0", false);
  expect_equal_by_both_rules("null", "false", false);
  expect_equal_by_both_rules("[]", "{}", false);
  expect_equal_by_both_rules(R"({"time_period":"14"})", R"({"time_period":14})", false);
}

TEST(JsonEqual, DistinctKeepsBooleansApartFromNumbers) {
  expect_equal("true", "1", BoolRule::distinct, false);
  expect_equal("false", "0", BoolRule::distinct, false);
  expect_equal("false", "0.0", BoolRule::distinct, false);
  expect_equal("[true]", "[1]", BoolRule::distinct, false);
  expect_equal("true", "true", BoolRule::distinct, true);
  expect_equal("true", "false", BoolRule::distinct, false);
}

TEST(JsonEqual, AsIntegersComparesBooleansAsPythonDoes) {
  expect_equal("true", "1", BoolRule::as_integers, true);
  expect_equal("true", "1.0", BoolRule::as_integers, true);
  expect_equal("false", "0", BoolRule::as_integers, true);
  expect_equal("false", "0.0", BoolRule::as_integers, true);
  expect_equal("false", "-0.0", BoolRule::as_integers, true);
  expect_equal("true", "2", BoolRule::as_integers, false);
  expect_equal("true", "0.5", BoolRule::as_integers, false);
  expect_equal("true", "false", BoolRule::as_integers, false);
  expect_equal("true", "true", BoolRule::as_integers, true);
  expect_equal(R"({"a":1,"b":[1,2.0]})", R"({"b":[1.0,2],"a":true})", BoolRule::as_integers, true);
}

TEST(JsonEqual, ObjectsAreUnorderedArraysOrdered) {
  expect_equal_by_both_rules(R"({"a":1,"b":[1,{"c":2.0}]})", R"({"b":[1.0,{"c":2}],"a":1})", true);
  expect_equal_by_both_rules(R"({"a":1})", R"({"a":1,"b":null})", false);
  expect_equal_by_both_rules(R"({"a":1})", R"({"a":1,"b":2})", false);
  expect_equal_by_both_rules("[1,2]", "[2,1]", false);
  expect_equal_by_both_rules(R"({"a":"x"})", R"({"a":"y"})", false);
  expect_equal_by_both_rules(R"({"symbol":"ETH/BTC","time_period":14})",
                             R"({"time_period":14.0,"symbol":"ETH/BTC"})", true);
}

TEST(JsonEqual, CanonicalTextSortsKeysAndEscapes) {
  EXPECT_EQ(canonical_json(json::parse(R"({"b":2.0,"a":"é\n","c":[true,null,0.5]})")),
            R"({"a":"é\n","b":2,"c":[true,null,0.5]})");
}
