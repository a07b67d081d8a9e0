// The YAML reader's guards (issue 13, item 5): input that made yaml-cpp 0.7.0 loop forever, an
// alias bomb, and config sources too large to be configs fail fast with a ConfigError.
#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <string>

#include "core/config.h"
#include "core/yaml_json.h"
#include "core_test_support.h"
#include "temp_dir.h"

namespace gym::core {
namespace {

namespace json = boost::json;
using gym::test::TempDir;
using testing::config_error_of;

TEST(YamlGuards, TokenThatCannotStartAValueIsASyntaxErrorNotAnEndlessStream) {
  // yaml-cpp 0.7.0's LoadAll returned endless empty documents for these (its issue 1040).
  for (const std::string text : {",", ",:", "  ,  \n", "a: 1\n---\n,\n"}) {
    std::string msg = config_error_of([&] { parse_yaml(text, "comma.yaml"); });
    EXPECT_CONTAINS(msg, "comma.yaml");
    EXPECT_CONTAINS(msg, "YAML syntax error");
    EXPECT_CONTAINS(msg, "',' cannot start a value");
  }
}

TEST(YamlGuards, DocumentsThatOnlyLookAlikeStillCount) {
  // Empty documents between markers move on: they are documents, not a stuck parser.
  EXPECT_CONTAINS(config_error_of([] { parse_yaml("---\n---\n", "x"); }), "2 YAML documents");
  EXPECT_EQ(parse_yaml("---\na: [1, 2]\n...\n", "x"), json::parse(R"({"a": [1, 2]})"));
  EXPECT_EQ(parse_yaml("a: ','\n", "x"), json::parse(R"({"a": ","})"));
}

TEST(YamlGuards, OverrideValueThatBrokeTheParserIsKeptAsText) {
  // `++a=,:` is not valid YAML; like `*.jsonl` it stays text
  // (docs/reference/configuration.md#overrides).
  ConfigSources sources = testing::sources_in({});
  sources.overrides = {"++a=,:"};
  json::object cfg = load_config(sources);
  EXPECT_EQ(cfg.at("a"), ",:");
}

// Nine levels of ten aliases each: 10^9 values once expanded, from a few hundred bytes.
std::string alias_bomb() {
  std::string text = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 9; ++level) {
    const std::string prev = "*l" + std::to_string(level - 1);
    text += "l" + std::to_string(level) + ": &l" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) text += (i ? ", " : "") + prev;
    text += "]\n";
  }
  return text;
}

TEST(YamlGuards, AliasBombIsAnErrorNotGigabytes) {
  const std::string bomb = alias_bomb();
  ASSERT_LT(bomb.size(), 1000u);
  std::string msg = config_error_of([&] { parse_yaml(bomb, "bomb.yaml"); });
  EXPECT_CONTAINS(msg, "bomb.yaml");
  EXPECT_CONTAINS(msg, "expands to more than 1000000 values");
  EXPECT_CONTAINS(msg, "aliases");
}

TEST(YamlGuards, OrdinaryAliasesAndMergeKeysStillExpand) {
  json::value v = parse_yaml(
      "base: &base {host: 127.0.0.1, ports: [1, 2]}\n"
      "a: *base\n"
      "b: {<<: *base, host: localhost}\n",
      "x");
  EXPECT_EQ(v.at("a"), json::parse(R"({"host": "127.0.0.1", "ports": [1, 2]})"));
  EXPECT_EQ(v.at("b"), json::parse(R"({"host": "localhost", "ports": [1, 2]})"));
  // Expansion within the allowance is fine: five levels of ten is about 10^5 values.
  std::string text = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 4; ++level) {
    text += "l" + std::to_string(level) + ": &l" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) text += (i ? ", *l" : "*l") + std::to_string(level - 1);
    text += "]\n";
  }
  EXPECT_EQ(parse_yaml(text, "x").at("l4").as_array().size(), 10u);
}

TEST(YamlGuards, AliasInsideItsOwnAnchorIsAnErrorNotAStackOverflow) {
  // Found by fuzz/fuzz_config: yaml-cpp makes `*b` the node being defined, a cycle that the
  // conversion followed until the stack ran out (a crash of every gym command).
  for (const std::string text : {"b: &b [x, *b]\n", "m: &m {self: *m}\n", "- &l [*l]\n"}) {
    std::string msg = config_error_of([&] { parse_yaml(text, "cycle.yaml"); });
    EXPECT_CONTAINS(msg, "cycle.yaml");
    EXPECT_CONTAINS(msg, "nest more than 1000 levels");
  }
  // Deep but finite nesting within the limit still reads.
  const std::string deep = std::string(100, '[') + "1" + std::string(100, ']');
  EXPECT_TRUE(parse_yaml(deep, "deep.yaml").is_array());
}

TEST(YamlGuards, ConfigFileOverTheSizeLimitIsAnError) {
  TempDir dir;
  const std::string big = dir.write("big.yaml", "a: \"" + std::string(kMaxYamlBytes, 'x') + "\"\n");
  std::string msg = config_error_of([&] { load_yaml_file(big); });
  EXPECT_CONTAINS(msg, big);
  EXPECT_CONTAINS(msg, "more than 16 MiB of YAML");
  EXPECT_CONTAINS(config_error_of([&] { parse_yaml(std::string(kMaxYamlBytes + 1, '#'), "env"); }),
                  "more than 16 MiB");
}

TEST(YamlGuards, DeviceWithoutEndIsReadNoFurtherThanTheLimit) {
  std::string msg = config_error_of([] { load_yaml_file("/dev/zero"); });
  EXPECT_CONTAINS(msg, "/dev/zero");
  EXPECT_CONTAINS(msg, "more than 16 MiB of YAML");
  ConfigSources sources = testing::sources_in({});
  sources.overrides = {"config_paths=[/dev/zero]"};
  EXPECT_CONTAINS(config_error_of([&] { load_config(sources); }), "/dev/zero");
}

}  // namespace
}  // namespace gym::core
