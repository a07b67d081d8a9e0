// json.loads and Python's types of JSON values (docs/reference/python-compat.md). Every expectation
// was checked against CPython 3.12.
#include "python_compat/json.h"

#include "python_compat/errors.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <cmath>
#include <cstdint>
#include <string>

namespace json = boost::json;
using namespace gym::python_compat;

TEST(PythonJson, ParsesPythonExtensions) {
  auto v = py_json_loads(R"( {"a": NaN, "b": [Infinity, -Infinity], "c": 1.0, "d": -0} )");
  const auto& o = v.get_object();
  EXPECT_TRUE(std::isnan(o.at("a").get_double()));
  EXPECT_EQ(o.at("b").get_array()[0].get_double(), INFINITY);
  EXPECT_EQ(o.at("b").get_array()[1].get_double(), -INFINITY);
  EXPECT_TRUE(o.at("c").is_double());
  EXPECT_TRUE(o.at("d").is_int64());
}

TEST(PythonJson, IntegersAreExactAndDuplicateKeysKeepTheLast) {
  auto v = py_json_loads(R"({"a":1,"b":2,"a":9007199254740993})");
  const auto& o = v.get_object();
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o.begin()->key(), "a");  // first position, last value
  EXPECT_EQ(o.at("a").get_int64(), 9007199254740993);
  EXPECT_EQ(py_json_loads("18446744073709551615").get_uint64(), 18446744073709551615ull);
  EXPECT_EQ(py_json_loads("-9223372036854775808").get_int64(), INT64_MIN);
  EXPECT_TRUE(py_json_loads("1e2").is_double());
}

TEST(PythonJson, StringsAndEscapes) {
  EXPECT_EQ(py_json_loads(R"("a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00")").get_string(),
            "a\"\\/\b\f\n\r\t\u00e9\U0001F600");
  EXPECT_EQ(py_json_loads(R"("\ud800x")").get_string(), "\uFFFDx");  // lone surrogate
  EXPECT_EQ(py_json_loads("\"ü\"").get_string(), "ü");
}

TEST(PythonJson, ErrorsCarryPythonMessages) {
  auto message = [](std::string_view text) {
    try {
      py_json_loads(text);
    } catch (const JSONDecodeError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("[1,"), "Expecting value: line 1 column 4 (char 3)");
  EXPECT_EQ(message(R"({"a" 1})"), "Expecting ':' delimiter: line 1 column 6 (char 5)");
  EXPECT_EQ(message("  \n x"), "Expecting value: line 2 column 2 (char 4)");
  EXPECT_EQ(message("\"é\" 1"), "Extra data: line 1 column 5 (char 4)");
  EXPECT_EQ(message(""), "Expecting value: line 1 column 1 (char 0)");
  EXPECT_EQ(message("{'a': 1}"),
            "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)");
  EXPECT_EQ(message("\"abc"), "Unterminated string starting at: line 1 column 1 (char 0)");
  EXPECT_EQ(message("\"a\nb\""), "Invalid control character at: line 1 column 3 (char 2)");
  EXPECT_EQ(message(R"("\x")"), "Invalid \\escape: line 1 column 2 (char 1)");
  EXPECT_EQ(message("[1,]"), "Expecting value: line 1 column 4 (char 3)");
  EXPECT_EQ(message("-"), "Expecting value: line 1 column 1 (char 0)");
  EXPECT_EQ(message("01"), "Extra data: line 1 column 2 (char 1)");
  EXPECT_EQ(message("\xEF\xBB\xBF{}"),
            "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)");
}

TEST(PythonJson, DeepNestingIsARecursionError) {
  std::string deep(2000, '[');
  EXPECT_THROW(py_json_loads(deep), RecursionError);
}

TEST(PythonJson, TypeNamesAndHashability) {
  EXPECT_EQ(py_type_name(json::value(nullptr)), "NoneType");
  EXPECT_EQ(py_type_name(json::value(1.5)), "float");
  EXPECT_EQ(py_type_name(json::value(std::uint64_t{1})), "int");
  EXPECT_EQ(py_type_name(json::array{}), "list");
  EXPECT_TRUE(py_hashable(json::value("x")));
  EXPECT_FALSE(py_hashable(json::object{}));
}

TEST(PythonJson, StrAndTruthOfValues) {
  EXPECT_EQ(py_str(json::value("it's")), "it's");
  EXPECT_EQ(py_str(json::value(nullptr)), "None");
  EXPECT_EQ(py_str(json::value(true)), "True");
  EXPECT_EQ(py_str(json::value(2.5)), "2.5");
  EXPECT_EQ(py_str(json::parse(R"([1,"a",null,true,2.5,{"k":[1.0]},"it's"])")),
            R"([1, 'a', None, True, 2.5, {'k': [1.0]}, "it's"])");
  EXPECT_EQ(py_str(json::parse(R"({"a":1e16})")), "{'a': 1e+16}");
  for (const char* text : {"null", "false", "0", "0.0", "\"\"", "[]", "{}"})
    EXPECT_FALSE(py_truthy(json::parse(text))) << text;
  for (const char* text : {"true", "-1", "0.5", "\"0\"", "[0]", "{\"a\":null}"})
    EXPECT_TRUE(py_truthy(json::parse(text))) << text;
}
