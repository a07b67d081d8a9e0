// What the config and JSON readers refuse instead of changing silently (issue 13 item 10):
// integers beyond 64 bits and floats beyond a double, keys with empty parts, and config text
// that would not survive the trip to the servers.
#include "core/json_text.h"

#include "core_test_support.h"

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>

#include "temp_dir.h"

namespace gym::core {
namespace {

namespace json = boost::json;
using testing::config_error_of;
using testing::sources_in;

std::string parse_error_of(std::string_view text) {
  boost::system::error_code ec;
  (void)parse_json(text, ec);
  return ec ? ec.message() : "";
}

TEST(JsonNumbers, IntegersBeyond64BitsAreRefusedNotRounded) {
  EXPECT_CONTAINS(parse_error_of("123456789012345678901234567890"), "integer out of range");
  EXPECT_CONTAINS(parse_error_of(R"({"id": -99999999999999999999})"), "integer out of range");
  EXPECT_EQ(parse_json("18446744073709551615").as_uint64(), 18446744073709551615ull);
  EXPECT_EQ(parse_json("-9223372036854775808").as_int64(), INT64_MIN);
}

TEST(JsonNumbers, FloatsBeyondADoubleAreRefusedAndTinyOnesAreZero) {
  EXPECT_CONTAINS(parse_error_of("1e400"), "number out of range");
  EXPECT_CONTAINS(parse_error_of("[-1.5e999]"), "number out of range");
  EXPECT_EQ(parse_json("1e-400").as_double(), 0.0);  // as Python's float('1e-400')
  EXPECT_EQ(parse_json("0.1").as_double(), 0.1);
}

TEST(OverrideKeys, EmptyPartsBetweenDotsAreErrors) {
  for (const char* bad : {"++a..b=1", "++.a=1", "++a.=1"}) {
    json::object cfg;
    EXPECT_CONTAINS(config_error_of([&] { apply_override(cfg, bad); }), "empty part between dots")
        << bad;
    EXPECT_TRUE(cfg.empty()) << bad;
  }
}

TEST(ConfigText, InvalidUtf8AndControlCharactersAreErrorsNamingTheKey) {
  gym::test::TempDir dir;
  auto load = [&](const std::string& yaml) {
    const auto path = dir.file("c.yaml");
    std::ofstream(path, std::ios::binary) << yaml;
    auto sources = sources_in({dir.path()});
    sources.config_paths = {path};
    return load_config(sources);
  };
  EXPECT_CONTAINS(config_error_of([&] { load("a:\n  b: \"bell\\x07\"\n"); }),
                  "a.b holds a control character (0x07)");
  EXPECT_CONTAINS(config_error_of([&] { load("a: \"\xff\xfe\"\n"); }), "a holds invalid UTF-8");
  EXPECT_CONTAINS(config_error_of([&] { load("a: \"\xed\xa0\x80\"\n"); }), "invalid UTF-8");
  auto ok = load("a: \"tab\\tnewline\\n é ✓ 🙂\"\n");
  EXPECT_EQ(ok.at("a").as_string(), "tab\tnewline\n é ✓ 🙂");
}

}  // namespace
}  // namespace gym::core
