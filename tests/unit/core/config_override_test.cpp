#include <boost/json.hpp>

#include "core/config.h"
#include "core_test_support.h"

namespace gym::core {
namespace {

namespace json = boost::json;
using testing::config_error_of;

json::object base() {
  return json::parse(R"({"a": {"b": 1, "list": [1, 2, 3]}, "name": "x", "n": null})").as_object();
}

TEST(Override, PlainFormReplacesAnExistingKey) {
  json::object cfg = base();
  apply_override(cfg, "a.b=5");
  EXPECT_EQ(cfg.at("a").at("b"), 5);
}

TEST(Override, PlainFormRefusesAMissingKeyAndSuggestsPlus) {
  json::object cfg = base();
  std::string msg = config_error_of([&] { apply_override(cfg, "a.c=5"); });
  EXPECT_CONTAINS(msg, "'a.c' does not exist");
  EXPECT_CONTAINS(msg, "+a.c=5");
  msg = config_error_of([&] { apply_override(cfg, "a.bb=5"); });
  EXPECT_CONTAINS(msg, "did you mean 'a.b'?");
  EXPECT_FALSE(cfg.at("a").as_object().contains("c"));
}

TEST(Override, PlusAddsANewKeyOnly) {
  json::object cfg = base();
  apply_override(cfg, "+a.c=7");
  EXPECT_EQ(cfg.at("a").at("c"), 7);
  std::string msg = config_error_of([&] { apply_override(cfg, "+a.b=2"); });
  EXPECT_CONTAINS(msg, "'a.b' already exists");
  EXPECT_CONTAINS(msg, "++a.b=2");
  EXPECT_EQ(cfg.at("a").at("b"), 1);
}

TEST(Override, DoublePlusAddsOrReplacesAndCreatesMappings) {
  json::object cfg = base();
  apply_override(cfg, "++a.b=2");
  apply_override(cfg, "++x.y.z=deep");
  apply_override(cfg, "++n.m=1");  // a null becomes a mapping
  EXPECT_EQ(cfg.at("a").at("b"), 2);
  EXPECT_EQ(cfg.at("x"), json::parse(R"({"y": {"z": "deep"}})"));
  EXPECT_EQ(cfg.at("n"), json::parse(R"({"m": 1})"));
}

TEST(Override, ValuesAreYaml) {
  const std::vector<std::pair<std::string, json::value>> cases = {
      {"[a,b]", json::array{"a", "b"}},
      {"[1, 2.5, true, null]", json::array{1, 2.5, true, nullptr}},
      {"{a: 1, b: [x]}", json::parse(R"({"a": 1, "b": ["x"]})")},
      {"5", 5},
      {"5.0", 5.0},
      {"true", true},
      {"null", nullptr},
      {"'5'", "5"},
      {"\"hello world\"", "hello world"},
      {"", ""},
      {"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"},
      {"data/*.jsonl", "data/*.jsonl"},
      {"*.jsonl", "*.jsonl"},
      {"a=b", "a=b"},  // only the first '=' separates key and value
  };
  for (const auto& [text, expected] : cases) {
    json::object cfg = base();
    apply_override(cfg, "++v=" + text);
    EXPECT_EQ(cfg.at("v"), expected) << text << " -> " << json::serialize(cfg.at("v"));
    EXPECT_EQ(cfg.at("v").kind(), expected.kind()) << text;
  }
}

TEST(Override, ListsCanBeIndexed) {
  json::object cfg = base();
  apply_override(cfg, "a.list.1=20");
  apply_override(cfg, "a.list[2]=30");
  EXPECT_EQ(cfg.at("a").at("list"), json::array({1, 20, 30}));
  std::string msg = config_error_of([&] { apply_override(cfg, "a.list.3=1"); });
  EXPECT_CONTAINS(msg, "list of 3 items");
}

TEST(Override, Malformed) {
  json::object cfg = base();
  EXPECT_CONTAINS(config_error_of([&] { apply_override(cfg, "a.b"); }), "has no '='");
  EXPECT_CONTAINS(config_error_of([&] { apply_override(cfg, "+++a.b=1"); }), "needs a key");
  EXPECT_CONTAINS(config_error_of([&] { apply_override(cfg, "=1"); }), "needs a key");
  EXPECT_CONTAINS(config_error_of([&] { apply_override(cfg, "++v=[a, b"); }), "override");
  EXPECT_CONTAINS(config_error_of([&] { apply_override(cfg, "++name.sub=1"); }),
                  "'name' is 'x', not a mapping");
}

TEST(Override, RecordsTheCommandLineAsOrigin) {
  json::object cfg = base();
  ConfigOrigins origins;
  apply_override(cfg, "++p.q=1", &origins);
  EXPECT_EQ(origins.find("p.q"), "the command line (++p.q=1)");
}

TEST(DeepMerge, MappingsMergeListsAndScalarsAreReplaced) {
  json::object cfg = json::parse(R"({"m": {"a": 1, "b": {"c": 2}}, "l": [1, 2], "s": "x",
                                     "keep": "???", "q": 5})")
                         .as_object();
  deep_merge(cfg, json::parse(R"({"m": {"b": {"d": 3}, "e": 4}, "l": [9], "s": {"now": "map"},
                                  "keep": 1, "q": "???", "new": "???"})")
                      .as_object());
  EXPECT_EQ(cfg, json::parse(R"({"m": {"a": 1, "b": {"c": 2, "d": 3}, "e": 4}, "l": [9],
                                 "s": {"now": "map"}, "keep": 1, "q": 5, "new": "???"})"));
}

}  // namespace
}  // namespace gym::core
