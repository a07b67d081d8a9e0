// The calculator environment: Python's arithmetic as environments/python_example evaluates it,
// and its verifier. (Its example data, recorded through the Python server, replays to the same
// rewards through this one: environments_test's ExampleSplit.)
#include "calculator/expression.h"
#include "environment_routes.h"
#include "http/router.h"
#include "servers/resources_server.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <string>
#include <variant>

namespace gym::environments {
servers::Environment calculator_environment();  // calculator.cpp
}

namespace {

namespace json = boost::json;
using gym::environments::calculator::evaluate;
using gym::environments::calculator::ExpressionError;
using gym::environments::calculator::Number;

struct Case {
  const char* expression;
  Number value;
};

TEST(CalculatorExpression, FollowsPythonArithmetic) {
  const Case cases[] = {
      {"36*14", std::int64_t{504}},
      {"245/3.5", 70.0},
      {"10/4", 2.5},
      {"(1 + 2) * 3", std::int64_t{9}},
      {"-2**2", std::int64_t{-4}},
      {"2**-1", 0.5},
      {"2**3**2", std::int64_t{512}},
      {"7 % -3", std::int64_t{-2}},
      {"-7 % 3", std::int64_t{2}},
      {"7.5 % 2", 1.5},
      {"--3", std::int64_t{3}},
      {"1e3", 1000.0},
      {" 1200 - 45*16 ", std::int64_t{480}},
      {"8/2", 4.0},
      {"+5", std::int64_t{5}},
  };
  for (const auto& c : cases) {
    Number got = evaluate(c.expression);
    EXPECT_EQ(got.index(), c.value.index()) << c.expression;
    EXPECT_EQ(got, c.value) << c.expression;
  }
}

TEST(CalculatorExpression, RefusesWhatIsNotArithmetic) {
  for (const char* bad : {"", "x", "2*", "(1+2", "1+2)", "__import__('os')", "2 ** 65", "1/0",
                          "5 % 0", "9223372036854775807 + 1", "3 ** 40", "."})
    EXPECT_THROW(evaluate(bad), ExpressionError) << bad;
}

json::object response_saying(const std::string& text) {
  json::object part{{"type", "output_text"}, {"text", text}};
  json::object message{{"type", "message"}, {"role", "assistant"}, {"content", json::array{part}}};
  return json::object{{"output", json::array{message}}};
}

TEST(CalculatorRoutes, ToolAndVerify) {
  const gym::test::EnvironmentRoutes s{gym::environments::calculator_environment()};
  EXPECT_EQ(s.post("/calculate", R"({"expression":"245/3.5"})").body, R"({"result":70})");
  EXPECT_EQ(s.post("/calculate", R"({"expression":"10/4"})").body, R"({"result":2.5})");
  EXPECT_NE(s.post("/calculate", R"({"expression":"x"})").body.find("\"error\""),
            std::string::npos);
  EXPECT_NE(s.post("/calculate", R"({"expr":1})").body.find("error"), std::string::npos);

  auto verify = [&](const json::value& expected, const std::string& text) {
    json::object body{{"responses_create_params", json::object{}},
                      {"response", response_saying(text)},
                      {"expected_answer", expected}};
    return s.post("/verify", json::serialize(body));
  };
  auto right = json::parse(verify(1234, "The total is\n1,234").body).as_object();
  EXPECT_EQ(right.at("reward").as_double(), 1.0);
  EXPECT_EQ(right.at("extracted_answer").as_double(), 1234.0);
  EXPECT_EQ(right.at("calculator_calls").as_int64(), 0);  // no session: nothing counted
  EXPECT_EQ(json::parse(verify(2.5, "2.5 then 3").body).at("reward").as_double(), 0.0);
  auto none = json::parse(verify(3, "no digits").body).as_object();
  EXPECT_EQ(none.at("reward").as_double(), 0.0);
  EXPECT_TRUE(none.at("extracted_answer").is_null());
  EXPECT_EQ(verify("3", "3").status, 422);
  EXPECT_EQ(verify(true, "1").status, 422);
}

}  // namespace
