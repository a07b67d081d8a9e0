#include <cmath>
#include <functional>
#include <limits>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <boost/json.hpp>

#include "core/yaml_json.h"
#include "core_test_support.h"
#include "temp_dir.h"

namespace gym::core {
namespace {

namespace json = boost::json;
using gym::test::TempDir;
using testing::config_error_of;

json::value scalar(const std::string& text) {
  return parse_yaml("v: " + text + "\n", "test.yaml").at("v");
}

struct ScalarCase {
  std::string text;
  json::value expected;
};

TEST(YamlScalars, PlainScalarsAreTypedLikePyYamlUnderOmegaConf) {
  const std::vector<ScalarCase> cases = {
      // null
      {"", nullptr},
      {"~", nullptr},
      {"null", nullptr},
      {"Null", nullptr},
      {"NULL", nullptr},
      {"nULL", "nULL"},
      // YAML 1.1 booleans, three capitalisations each; y/n stay text
      {"true", true},
      {"True", true},
      {"TRUE", true},
      {"yes", true},
      {"Yes", true},
      {"YES", true},
      {"on", true},
      {"On", true},
      {"ON", true},
      {"false", false},
      {"False", false},
      {"FALSE", false},
      {"no", false},
      {"No", false},
      {"NO", false},
      {"off", false},
      {"Off", false},
      {"OFF", false},
      {"y", "y"},
      {"n", "n"},
      {"tRUE", "tRUE"},
      // integers
      {"0", 0},
      {"42", 42},
      {"-17", -17},
      {"+5", 5},
      {"1_000", 1000},
      {"0x1F", 31},
      {"0b101", 5},
      {"017", 15},
      {"12:30", 750},
      {"9223372036854775807", INT64_MAX},
      {"-9223372036854775808", INT64_MIN},
      {"18446744073709551615", UINT64_MAX},
      {"08", "08"},
      {"0o17", "0o17"},
      {"1_2a", "1_2a"},
      // floats (OmegaConf's pattern: an exponent needs no dot)
      {"1.5", 1.5},
      {"-2.25", -2.25},
      {"1.", 1.0},
      {".5", 0.5},
      {"1e-3", 0.001},
      {"1e3", 1000.0},
      {"1.0e+3", 1000.0},
      {"1_000.5", 1000.5},
      {"1:30.5", 90.5},
      {"-.5", "-.5"},
      {"1.2.3", "1.2.3"},
      // no timestamps, and everything else is text
      {"2024-01-01", "2024-01-01"},
      {"hello world", "hello world"},
      {"a:b", "a:b"},
      // quoted and tagged scalars are always text
      {"'5'", "5"},
      {"\"true\"", "true"},
      {"'null'", "null"},
      {"''", ""},
      {"!!str 5", "5"},
  };
  for (const auto& c : cases) {
    json::value got = scalar(c.text);
    EXPECT_EQ(got, c.expected) << "for `" << c.text << "` got " << json::serialize(got);
    EXPECT_EQ(got.kind(), c.expected.kind()) << "for `" << c.text << "`";
  }
}

TEST(YamlScalars, InfinityAndNan) {
  EXPECT_EQ(scalar(".inf").as_double(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(scalar("-.Inf").as_double(), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(scalar(".NaN").as_double()));
}

TEST(YamlScalars, IntegerBeyond64BitsIsAnError) {
  std::string msg = config_error_of([] { scalar("99999999999999999999"); });
  EXPECT_CONTAINS(msg, "test.yaml");
  EXPECT_CONTAINS(msg, "quote it");
}

// yaml_plain_scalar implements these two resolvers by hand; every string of up to 4 characters
// from the characters they look at, and longer ones of each shape, is typed as they say.
TEST(YamlScalars, TypingFollowsTheResolverPatterns) {
  // PyYAML's int resolver (YAML 1.1) and OmegaConf's float resolver.
  const std::regex int_pattern(
      R"([-+]?(0b[01_]+|0[0-7_]+|0|[1-9][0-9_]*|0x[0-9a-fA-F_]+|[1-9][0-9_]*(:[0-5]?[0-9])+))");
  const std::regex float_pattern(
      R"([-+]?([0-9][0-9_]*\.[0-9_]*([eE][-+]?[0-9]+)?|[0-9][0-9_]*[eE][-+]?[0-9]+)"
      R"(|[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*|\.(inf|Inf|INF)))"
      R"(|\.[0-9][0-9_]*([eE][-+][0-9]+)?|\.(nan|NaN|NAN))");
  const auto check = [&](const std::string& text) {
    json::kind expected = json::kind::string;
    if (std::regex_match(text, int_pattern)) {
      expected = json::kind::int64;
    } else if (std::regex_match(text, float_pattern)) {
      expected = json::kind::double_;
    }
    json::kind got = json::kind::null;
    try {
      got = yaml_plain_scalar(text).kind();
      if (got == json::kind::uint64) got = json::kind::int64;
    } catch (const std::out_of_range&) {
      got = json::kind::int64;  // an int, too large
    }
    EXPECT_EQ(got, expected) << "for `" << text << "`";
  };
  const std::string alphabet = "0159_.:eE+-bxf";
  std::string text;
  const std::function<void()> all = [&] {
    if (!text.empty()) check(text);
    if (text.size() == 4) return;
    for (char c : alphabet) {
      text.push_back(c);
      all();
      text.pop_back();
    }
  };
  all();
  std::istringstream longer(
      "0b1_01 0x_fF 0_17 1_000 190:20:30 1:60 1:5: 1::5 -1:30 1:30.5 1:30:5.25 1:7. "
      "1:123.0 1.5e+10 1_0.0_1E-3 12e 12e+ .5e+3 .5e3 .5_ -.5 .inf -.Inf +.INF .iNF "
      ".nan .NaN -.nan .NAN +0 -0x1 9223372036854775808 99999999999999999999 1_2a "
      "2024-01-01 0o17");
  for (std::string text; longer >> text;) check(text);
}

TEST(YamlParse, BlockScalarsAreText) {
  json::value v = parse_yaml("a: |\n  line 1\n  42\nb: >\n  folded\n  text\n", "x");
  EXPECT_EQ(v.at("a"), "line 1\n42\n");
  EXPECT_EQ(v.at("b"), "folded text\n");
}

TEST(YamlParse, MergeKeysProvideDefaults) {
  json::value v = parse_yaml(R"(
base: &base {x: 1, y: 2}
other: &other {y: 20, z: 30}
one: {<<: *base, y: 3}
many:
  <<: [*base, *other]
  w: 0
)",
                             "x");
  EXPECT_EQ(v.at("one"), json::parse(R"({"x": 1, "y": 3})"));
  // In a list, the earlier mapping wins; explicit keys win over all.
  EXPECT_EQ(v.at("many").at("y"), 2);
  EXPECT_EQ(v.at("many").at("z"), 30);
  EXPECT_EQ(v.at("many").at("w"), 0);
}

TEST(YamlParse, DuplicateKeyKeepsFirstPositionAndLastValue) {
  json::value v = parse_yaml("a: 1\nb: 2\na: 3\n", "x");
  ASSERT_EQ(v.as_object().size(), 2u);
  EXPECT_EQ(v.as_object().begin()->key(), "a");
  EXPECT_EQ(v.at("a"), 3);
}

TEST(YamlParse, EmptyDocumentIsNull) {
  EXPECT_TRUE(parse_yaml("# only a comment\n", "x").is_null());
}

TEST(YamlParse, SyntaxErrorNamesOriginAndLine) {
  std::string msg = config_error_of([] { parse_yaml("a: 1\nb: [1, 2\nc: 3\n", "conf/a.yaml"); });
  EXPECT_CONTAINS(msg, "conf/a.yaml");
  EXPECT_CONTAINS(msg, "line ");
  EXPECT_CONTAINS(msg, "YAML syntax error");
}

TEST(YamlParse, SeveralDocumentsAreAnError) {
  std::string msg = config_error_of([] { parse_yaml("a: 1\n---\nb: 2\n", "two.yaml"); });
  EXPECT_CONTAINS(msg, "2 YAML documents");
}

// Errors of the conversion name the node's position; an alias is its anchor's node, so it points
// at the anchor. A syntax error in a later document counts too.
TEST(YamlParse, ErrorsNameThePositionOfTheirNode) {
  EXPECT_CONTAINS(config_error_of([] { parse_yaml("a: 1\n? [x]\n: 2\n", "k.yaml"); }),
                  "k.yaml at line 2, column 3: mapping keys must be plain text");
  EXPECT_CONTAINS(
      config_error_of([] { parse_yaml("base: &b 1\nm:\n  x: 1\n  <<: *b\n", "k.yaml"); }),
      "k.yaml at line 1, column 7: a `<<` merge key needs a mapping");
  EXPECT_CONTAINS(config_error_of([] { parse_yaml("a:\n  b: 99999999999999999999\n", "k.yaml"); }),
                  "k.yaml at line 2, column 6: the number 99999999999999999999 does not fit");
  EXPECT_CONTAINS(config_error_of([] { parse_yaml("a: 1\n---\nb: [\n", "k.yaml"); }),
                  "YAML syntax error at line 4, column 1");
  EXPECT_EQ(parse_yaml("{a: 1, a: 2, b: &b [3], c: *b}", "k.yaml"),
            json::parse(R"({"a": 2, "b": [3], "c": [3]})"));
}

TEST(YamlFile, MissingFileIsAConfigError) {
  TempDir dir;
  std::string msg = config_error_of([&] { load_yaml_file(dir.file("nope.yaml")); });
  EXPECT_CONTAINS(msg, dir.file("nope.yaml"));
  EXPECT_CONTAINS(msg, "does not exist");
}

TEST(YamlFile, LoadsAFile) {
  TempDir dir;
  std::string path = dir.write("a.yaml", "x: {y: [1, two]}\n");
  EXPECT_EQ(load_yaml_file(path), json::parse(R"({"x": {"y": [1, "two"]}})"));
}

TEST(ToYaml, RoundTripsTrickyValues) {
  json::object tree;
  const std::vector<std::string> strings = {"yes",
                                            "no",
                                            "on",
                                            "Off",
                                            "y",
                                            "123",
                                            "-5",
                                            "1.5",
                                            "1e3",
                                            "0x1F",
                                            "017",
                                            "12:30",
                                            ".inf",
                                            "",
                                            "null",
                                            "~",
                                            "NULL",
                                            "true",
                                            "a: b",
                                            "- item",
                                            "# comment",
                                            "key: value # c",
                                            "multi\nline\ntext\n",
                                            "unicode héllo ✓ 日本語",
                                            "  leading space",
                                            "trailing space ",
                                            "${a.b}",
                                            "\\${escaped}",
                                            "<<",
                                            "@at",
                                            "`tick",
                                            "*star",
                                            "&anchor",
                                            "!bang",
                                            "%percent",
                                            "'single",
                                            "\"double",
                                            "tab\there",
                                            "[not, a, list]",
                                            "{not: a map}",
                                            "???",
                                            "-",
                                            "?",
                                            ":",
                                            "a,b",
                                            "back\\slash"};
  json::array list;
  for (const auto& s : strings) list.emplace_back(s);
  tree["strings"] = list;
  tree["123"] = "numeric key";
  tree["true"] = "bool key";
  tree[""] = "empty key";
  tree["a b: c"] = "odd key";
  tree["numbers"] = json::array{0,
                                -7,
                                INT64_MAX,
                                INT64_MIN,
                                UINT64_MAX,
                                1.0,
                                0.1,
                                1e-05,
                                1e+20,
                                -0.0,
                                123456789.125,
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity()};
  tree["flags"] = json::array{true, false, nullptr};
  tree["empty_map"] = json::object();
  tree["empty_list"] = json::array();
  tree["nested"] = json::parse(R"({"a": [{"b": [1, [2, 3]], "c": {}}, []], "d": {"e": null}})");

  std::string text = to_yaml(tree);
  json::value back = parse_yaml(text, "round-trip");
  EXPECT_EQ(back, json::value(tree)) << text;
  // Kinds survive too (1.0 stays a double, "123" stays a string).
  EXPECT_TRUE(back.at("numbers").at(5).is_double()) << text;
  EXPECT_EQ(back.at("numbers").at(2).kind(), json::kind::int64);
  EXPECT_CONTAINS(text, "\"yes\"");
}

TEST(ToYaml, NanRoundTrips) {
  json::value back = parse_yaml(to_yaml(json::object{{"x", std::nan("")}}), "x");
  EXPECT_TRUE(std::isnan(back.at("x").as_double()));
}

TEST(ToYaml, IsBlockStyle) {
  std::string text = to_yaml(json::parse(R"({"a": {"b": [1, 2]}})"));
  EXPECT_EQ(text, "a:\n  b:\n    - 1\n    - 2\n");
}

TEST(PythonFloatRepr, MatchesPython) {
  const std::vector<std::pair<double, std::string>> cases = {
      {1.0, "1.0"},
      {0.1, "0.1"},
      {-2.5, "-2.5"},
      {100.0, "100.0"},
      {0.0001, "0.0001"},
      {1e-05, "1e-05"},
      {1e16, "1e+16"},
      {1.5e300, "1.5e+300"},
      {123456789012345678.0, "1.2345678901234568e+17"},
      {-0.0, "-0.0"},
      {0.30000000000000004, "0.30000000000000004"}};
  for (const auto& [d, text] : cases) EXPECT_EQ(python_float_repr(d), text);
}

}  // namespace
}  // namespace gym::core
