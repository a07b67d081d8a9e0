#include <limits>

#include <boost/json.hpp>

#include "core/config.h"
#include "core/logging.h"
#include "core/yaml_json.h"
#include "core_test_support.h"

namespace gym::core {
namespace {

namespace json = boost::json;
using testing::config_error_of;

constexpr auto kMax = std::numeric_limits<std::int64_t>::max();

json::object cfg() {
  return parse_yaml(R"(
a: {b: 5, f: 2.0, half: 1.5, s: "8000", word: abc, flag: true, sflag: "TRUE", nothing: null}
list: [{x: 1}, {x: 2}]
neg: -3
)",
                    "test.yaml")
      .as_object();
}

TEST(FindPath, WalksMappingsAndLists) {
  EXPECT_EQ(*find_path(cfg(), "a.b"), 5);
  EXPECT_EQ(*find_path(cfg(), "list.1.x"), 2);
  EXPECT_EQ(*find_path(cfg(), "list[0].x"), 1);
  EXPECT_EQ(find_path(cfg(), "a.missing"), nullptr);
  EXPECT_EQ(find_path(cfg(), "a.b.c"), nullptr);
  EXPECT_EQ(find_path(cfg(), "list.7"), nullptr);
}

TEST(GetInt, DefaultsValuesAndLaxConversions) {
  EXPECT_EQ(get_int(cfg(), "a.b", 0, 0, kMax), 5);
  EXPECT_EQ(get_int(cfg(), "a.f", 0, 0, kMax), 2);      // integral double
  EXPECT_EQ(get_int(cfg(), "a.s", 0, 1, 65535), 8000);  // numeric string (from ${oc.env:...})
  EXPECT_EQ(get_int(cfg(), "a.absent", 7, 0, kMax), 7);
  EXPECT_EQ(get_int(cfg(), "a.nothing", 7, 0, kMax), 7);  // null means unset
}

TEST(GetInt, ErrorsNameTheKeyRuleValueAndFix) {
  EXPECT_EQ(config_error_of([] { get_int(cfg(), "a.half", 1, 1, 100); }),
            "config error: config key `a.half` must be an integer between 1 and 100, got 1.5; "
            "set it with ++a.half=1");
  EXPECT_CONTAINS(config_error_of([] { get_int(cfg(), "neg", 1, 1, kMax); }),
                  "must be an integer >= 1, got -3");
  EXPECT_CONTAINS(config_error_of([] { get_int(cfg(), "a.word", 3, 0, kMax); }),
                  "got 'abc'; set it with ++a.word=3");
  EXPECT_CONTAINS(config_error_of([] { get_int(cfg(), "a.flag", 0, 0, kMax); }), "got true");
}

TEST(GetDouble, AcceptsIntegersAndChecksRange) {
  EXPECT_EQ(get_double(cfg(), "a.b", 0, 0, 10), 5.0);
  EXPECT_EQ(get_double(cfg(), "a.half", 0, 0, 10), 1.5);
  EXPECT_EQ(get_double(cfg(), "a.absent", 0.25, 0, 10), 0.25);
  EXPECT_CONTAINS(config_error_of([] { get_double(cfg(), "a.b", 0.5, 0, 1); }),
                  "config key `a.b` must be a number between 0 and 1, got 5; set it with "
                  "++a.b=0.5");
  EXPECT_CONTAINS(config_error_of([] {
                    get_double(cfg(), "a.half", 0, 2, std::numeric_limits<double>::infinity());
                  }),
                  "a number >= 2");
}

TEST(GetBool, TrueFalseAndTheirStrings) {
  EXPECT_TRUE(get_bool(cfg(), "a.flag", false));
  EXPECT_TRUE(get_bool(cfg(), "a.sflag", false));
  EXPECT_FALSE(get_bool(cfg(), "a.absent", false));
  EXPECT_CONTAINS(config_error_of([] { get_bool(cfg(), "a.b", false); }),
                  "config key `a.b` must be true or false, got 5; set it with ++a.b=false");
}

TEST(GetString, TextAndNumbers) {
  EXPECT_EQ(get_string(cfg(), "a.word", ""), "abc");
  EXPECT_EQ(get_string(cfg(), "a.b", ""), "5");
  EXPECT_EQ(get_string(cfg(), "a.absent", "dflt"), "dflt");
  EXPECT_CONTAINS(config_error_of([] { get_string(cfg(), "list", "x"); }),
                  "config key `list` must be a string");
}

TEST(Logging, InitTwiceIsFine) {
  init_logging(false);
  EXPECT_NO_THROW(init_logging(true));
}

}  // namespace
}  // namespace gym::core
