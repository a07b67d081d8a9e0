// JSON value equality and canonical text (environments.md 8.3 step 4), normalisation (8.3).
#include "models/json_compare.h"
#include "models/replay_store.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace json = boost::json;
using gym::models::canonical_json;
using gym::models::json_equal;

namespace {

void expect_equal(std::string_view a, std::string_view b, bool equal) {
  auto va = json::parse(a);
  auto vb = json::parse(b);
  EXPECT_EQ(json_equal(va, vb), equal) << a << " vs " << b;
  EXPECT_EQ(json_equal(vb, va), equal) << b << " vs " << a;
  EXPECT_EQ(canonical_json(va) == canonical_json(vb), equal)
      << canonical_json(va) << " vs " << canonical_json(vb);
}

}  // namespace

TEST(JsonCompare, NumbersCompareByValue) {
  expect_equal("1", "1.0", true);
  expect_equal("-3", "-3.0", true);
  expect_equal("0", "-0.0", true);
  expect_equal("0.1", "0.1", true);
  expect_equal("1", "1.5", false);
  expect_equal("9007199254740993", "9007199254740992.0", false);
  expect_equal("18446744073709551615", "18446744073709551615", true);
}

TEST(JsonCompare, KindsNeverMix) {
  expect_equal(R"("14")", "14", false);
  expect_equal("true", "1", false);
  expect_equal("false", "0", false);
  expect_equal("null", "0", false);
  expect_equal("[]", "{}", false);
}

TEST(JsonCompare, ObjectsAreUnorderedArraysOrdered) {
  expect_equal(R"({"a":1,"b":[1,{"c":2.0}]})", R"({"b":[1.0,{"c":2}],"a":1})", true);
  expect_equal(R"({"a":1})", R"({"a":1,"b":null})", false);
  expect_equal("[1,2]", "[2,1]", false);
  expect_equal(R"({"a":"x"})", R"({"a":"y"})", false);
}

TEST(JsonCompare, CanonicalTextSortsKeysAndEscapes) {
  EXPECT_EQ(canonical_json(json::parse(R"({"b":2.0,"a":"é\n","c":[true,null,0.5]})")),
            R"({"a":"é\n","b":2,"c":[true,null,0.5]})");
}

TEST(Normalize, StringInputBecomesOneUserMessage) {
  auto out = gym::models::normalize_input(json::value("hi"));
  EXPECT_EQ(json::serialize(out), R"([{"type":"message","role":"user","content":"hi"}])");
}

TEST(Normalize, MessagesGetTypeAndNullsAreDropped) {
  auto in = json::parse(R"([{"role":"user","content":"a","type":null},
                            {"type":"function_call_output","call_id":"c","output":"x","id":null,
                             "status":null},
                            {"role":"user","content":[{"type":"input_text","text":"t","x":null}]},
                            {"type":"reasoning","id":"r","summary":[]}])");
  auto out = gym::models::normalize_input(in);
  auto expected = json::parse(R"([{"role":"user","content":"a","type":"message"},
                                  {"type":"function_call_output","call_id":"c","output":"x"},
                                  {"role":"user","content":[{"type":"input_text","text":"t"}],
                                   "type":"message"},
                                  {"type":"reasoning","id":"r","summary":[]}])");
  EXPECT_TRUE(json_equal(out, expected)) << json::serialize(out);
}

TEST(Normalize, OtherValuesGiveAnEmptyInput) {
  EXPECT_TRUE(gym::models::normalize_input(json::value(5)).empty());
}
