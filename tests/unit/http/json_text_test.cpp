// JSON rendering must match Python's json.dumps(separators=(",", ":"), ensure_ascii=False) and
// float repr (runtime.md 4.1, R7).
#include "core/json_text.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using gym::core::render_json;

TEST(JsonText, FloatsFollowPythonRepr) {
  struct Case {
    double v;
    const char* text;
  } cases[] = {{1.0, "1.0"},        {80.0, "80.0"},        {0.1, "0.1"},
               {1e-05, "1e-05"},    {0.0001, "0.0001"},    {1e16, "1e+16"},
               {1e15, "1000000000000000.0"}, {123.456, "123.456"}, {-2.5, "-2.5"},
               {0.0, "0.0"},        {1.5e-7, "1.5e-07"},   {2.5e+20, "2.5e+20"},
               {0.3333333333333333, "0.3333333333333333"}, {1e100, "1e+100"}};
  for (const auto& c : cases) EXPECT_EQ(render_json(boost::json::value(c.v)), c.text) << c.v;
}

TEST(JsonText, NonFiniteFloatsBecomeNull) {
  EXPECT_EQ(render_json(boost::json::value(std::numeric_limits<double>::infinity())), "null");
  EXPECT_EQ(render_json(boost::json::value(std::nan(""))), "null");
}

TEST(JsonText, CompactWithUnescapedUnicode) {
  auto v = boost::json::parse(R"({"a": [1, 2.0, "Zürich ✓"], "b": {"c": null, "d": true}})");
  EXPECT_EQ(render_json(v), "{\"a\":[1,2.0,\"Zürich ✓\"],\"b\":{\"c\":null,\"d\":true}}");
}

TEST(JsonText, EscapesLikePython) {
  boost::json::value v = "q\"b\\n\n\t\x01\x7f";
  EXPECT_EQ(render_json(v), "\"q\\\"b\\\\n\\n\\t\\u0001\x7f\"");
}

TEST(JsonText, IntegersStayIntegers) {
  EXPECT_EQ(render_json(boost::json::parse("[5, -7, 18446744073709551615]")),
            "[5,-7,18446744073709551615]");
}
