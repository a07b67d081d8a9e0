// JSON rendering must match Python's json.dumps(separators=(",", ":"), ensure_ascii=False) and
// float repr (docs/design/wire-compatibility.md#json-numbers).
#include "core/json_text.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

using gym::core::render_json;

TEST(JsonText, FloatsFollowPythonRepr) {
  struct Case {
    double v;
    const char* text;
  } cases[] = {{1.0, "1.0"},
               {80.0, "80.0"},
               {0.1, "0.1"},
               {1e-05, "1e-05"},
               {0.0001, "0.0001"},
               {1e16, "1e+16"},
               {1e15, "1000000000000000.0"},
               {123.456, "123.456"},
               {-2.5, "-2.5"},
               {0.0, "0.0"},
               {1.5e-7, "1.5e-07"},
               {2.5e+20, "2.5e+20"},
               {0.3333333333333333, "0.3333333333333333"},
               {1e100, "1e+100"}};
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

TEST(JsonParse, DoublesAreReadToTheNearestValue) {
  // Boost.JSON 1.81's own parser reads about 9% of 17-digit floats one ulp off.
  for (const char* text : {"12.088995980580641", "0.30000000000000004", "2.2250738585072014e-308",
                           "1.7976931348623157e+308", "5e-324", "0.1", "-4.35", "1E+2"}) {
    boost::system::error_code ec;
    auto v = gym::core::parse_json(std::string("[") + text + "]", ec);
    ASSERT_FALSE(ec) << text;
    EXPECT_EQ(v.as_array()[0].as_double(), std::strtod(text, nullptr)) << text;
  }
  EXPECT_EQ(render_json(gym::core::parse_json("12.088995980580641")), "12.088995980580641");
}

TEST(JsonParse, KeepsIntegersAndStructure) {
  auto v = gym::core::parse_json(R"({"a":[1,-2,18446744073709551615,true,null,"x\u00e9"],"b":{}})");
  EXPECT_EQ(render_json(v), R"({"a":[1,-2,18446744073709551615,true,null,"xé"],"b":{}})");
}

TEST(JsonParse, ReportsErrorsWithTheirOffset) {
  boost::system::error_code ec;
  std::size_t used = 0;
  gym::core::parse_json(R"({"a": oops})", ec, &used);
  EXPECT_TRUE(ec);
  EXPECT_EQ(used, 6u);
  gym::core::parse_json("[1] [2]", ec);
  EXPECT_TRUE(ec);  // trailing data
  std::string deep(1001, '[');
  deep += std::string(1001, ']');
  gym::core::parse_json(deep, ec);
  EXPECT_TRUE(ec);  // deeper than Python's recursion limit
  std::string ok(999, '[');
  ok += std::string(999, ']');
  gym::core::parse_json(ok, ec);
  EXPECT_FALSE(ec);
}

TEST(JsonText, IndentedLikePythonJsonDumps) {
  // python3 -c 'import json; print(json.dumps({"a":[1,2.0],"b":{},"c":[],"d":{"e":None}},
  // indent=2))'
  auto v = boost::json::parse(R"({"a":[1,2.0],"b":{},"c":[],"d":{"e":null}})");
  EXPECT_EQ(gym::core::render_json_indented(v, 2),
            "{\n  \"a\": [\n    1,\n    2.0\n  ],\n  \"b\": {},\n  \"c\": [],\n  \"d\": {\n"
            "    \"e\": null\n  }\n}");
  EXPECT_EQ(gym::core::render_json_indented(boost::json::value(0.5), 4), "0.5");
  // json.dumps({"a": 1, "b": [1, 2]}) -> {"a": 1, "b": [1, 2]}
  EXPECT_EQ(gym::core::render_json_indented(boost::json::parse(R"({"a":1,"b":[1,2]})"), -1),
            R"({"a": 1, "b": [1, 2]})");
}

// Text of unknown encoding (an endpoint's Latin-1 error page) in a JSON string: each byte that
// starts no valid UTF-8 sequence is written as U+FFFD, so every JSON text gym writes (output
// files, HTTP bodies) is UTF-8 that Python's json reads; valid text is untouched.
TEST(JsonText, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  EXPECT_EQ(render_json(boost::json::value("Acc\xE8s refus\xE9")), "\"Acc\uFFFDs refus\uFFFD\"");
  EXPECT_EQ(render_json(boost::json::value("caf\xC3\xA9 \xF0\x9F\x98\x80 \x7F")),
            "\"caf\xC3\xA9 \xF0\x9F\x98\x80 \x7F\"");
  EXPECT_EQ(render_json(boost::json::value("\xC3")), "\"\uFFFD\"");  // cut short
  EXPECT_EQ(render_json(boost::json::value("\xED\xA0\x80\n")),
            "\"\uFFFD\uFFFD\uFFFD\\n\"");                                      // a surrogate
  EXPECT_EQ(render_json(boost::json::value("\xC0\xAF")), "\"\uFFFD\uFFFD\"");  // overlong "/"
  boost::json::object keyed;
  keyed["k\xFF"] = "v";
  EXPECT_EQ(render_json(keyed), "{\"k\uFFFD\":\"v\"}");
  EXPECT_EQ(gym::core::render_json_indented(keyed, 2), "{\n  \"k\uFFFD\": \"v\"\n}");
  EXPECT_TRUE(gym::core::is_valid_utf8("caf\xC3\xA9"));
  EXPECT_FALSE(gym::core::is_valid_utf8("caf\xE9"));
  EXPECT_EQ(gym::core::utf8_replace_invalid("caf\xE9!"), "caf\uFFFD!");
}

// The check against the definition: a sequence is valid when it decodes to a code point of its
// own length's range (no overlong form) that is no surrogate and at most U+10FFFF. Every lead
// byte with every second byte, completed to the length its lead announces (or one byte short)
// with continuation bytes or an ASCII byte.
TEST(JsonText, Utf8ValidityMatchesTheDefinitionForEveryLeadAndSecondByte) {
  auto announced_length = [](unsigned char c) -> std::size_t {
    return c >= 0xC0 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xF0 && c < 0xF8 ? 4 : 0;
  };
  auto valid_by_definition = [&](const std::string& s) {
    const std::size_t len = announced_length(static_cast<unsigned char>(s[0]));
    if (len == 0 || s.size() != len) return false;
    std::uint32_t cp = static_cast<unsigned char>(s[0]) & (0xFF >> (len + 1));
    for (std::size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[k]) & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (static_cast<unsigned char>(s[k]) & 0x3F);
    }
    const std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    return cp >= least[len] && !(cp >= 0xD800 && cp <= 0xDFFF) && cp <= 0x10FFFF;
  };
  int valid = 0;
  for (int lead = 0x80; lead <= 0xFF; ++lead) {
    const std::size_t len = std::max<std::size_t>(announced_length(lead), 2);
    for (int second = 0; second <= 0xFF; ++second)
      for (std::size_t size = len; size >= 2 && size + 1 >= len; --size)
        for (char filler : {'\x80', '\xBF', 'a'}) {
          std::string s{static_cast<char>(lead), static_cast<char>(second)};
          s.append(size - 2, filler);
          const bool expected = valid_by_definition(s);
          EXPECT_EQ(gym::core::is_valid_utf8(s), expected)
              << std::hex << lead << " " << second << " size " << size;
          valid += expected;
        }
  }
  // 2 bytes: C2-DF x 64; 3: (E0: 32, ED: 32, others 64 x 14) x 2 fillers; 4: (F0: 48, F4: 16,
  // F1-F3: 64 x 3) x 2 fillers; a 2-byte one is counted once per filler (it needs none).
  EXPECT_EQ(valid, 30 * 64 * 3 + (32 + 32 + 64 * 14) * 2 + (48 + 16 + 64 * 3) * 2);
}
