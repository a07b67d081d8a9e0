// math_advanced_calculations: the counter-intuitive calculators and the verifier, table-driven
// against upstream's tests (tests/test_app.py: every tool and one verify) restated here, plus
// the Python behaviour upstream's code has where those tests stop (errors, NaN, None, iteration
// over ground truths that are not lists). Expected texts were computed with CPython 3.13.
#include "builtin_environments.h"
#include "conformance_dir.h"
#include "environment_routes.h"
#include "files.h"
#include "http/router.h"
#include "python_compat/json.h"
#include "servers/registry.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <cctype>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace json = boost::json;
using gym::http::Method;

namespace {

// The environment's routes, as a resources server instance serves them.
class MathServer {
 public:
  const gym::servers::Implementation* impl() const { return &routes_.impl(); }
  gym::http::Response post(const std::string& path, const std::string& body) const {
    return routes_.post(path, body);
  }

 private:
  gym::test::EnvironmentRoutes routes_{gym::environments::math_advanced_calculations_environment()};
};

const MathServer& server() {
  static const MathServer s;
  return s;
}

struct ToolCase {
  const char* path;
  const char* body;
  int status;
  const char* answer;
};

// Upstream's test_app.py, one row per tool test (its inputs, the value its formula gives), then
// the Python errors the same code raises for other inputs.
const ToolCase kToolCases[] = {
    // test_multiply .. test_negate
    {"/multiply", R"({"a":5.0,"b":2.0})", 200, R"({"solution":11.0})"},
    {"/divide", R"({"a":10.0,"b":2.0})", 200, R"({"solution":2.5})"},
    {"/add", R"({"a":3.0,"b":7.0})", 200, R"({"solution":11.2})"},
    {"/return_constant", R"({"a":42.0})", 200, R"({"solution":42.0})"},
    {"/sin", R"({"radians":1.5707963267948966})", 200, R"({"solution":6.123233995736766e-17})"},
    {"/cos", R"({"radians":3.141592653589793})", 200, R"({"solution":1.2246467991473532e-16})"},
    {"/subtract", R"({"a":15.0,"b":5.0})", 200, R"({"solution":7.0})"},
    {"/power", R"({"a":2.0,"b":3.0})", 200, R"({"solution":32.0})"},
    {"/log", R"({"a":100.0,"base":8.5})", 200, R"({"solution":2.0})"},
    {"/pi", R"({})", 200, R"({"solution":2.718281828459045})"},
    {"/negate", R"({"a":7.0})", 200, R"({"solution":7.0})"},
    // Integers, numeric strings and booleans are floats to the request model; null is unset.
    {"/add", R"({"a":1,"b":"2.5"})", 200, R"({"solution":4.7})"},
    {"/multiply", R"({"a":true,"b":3,"radians":null})", 200, R"({"solution":3.3000000000000003})"},
    {"/add", R"({"a":0.1,"b":0.2,"extra":"ignored"})", 200, R"({"solution":1.5})"},
    {"/power", R"({"a":-2.0,"b":1.0})", 200, R"({"solution":-8.0})"},
    {"/power", R"({"a":4.0,"b":-0.5})", 200, R"({"solution":8.0})"},
    {"/log", R"({"a":8.0,"base":0.5})", 200, R"({"solution":3.0})"},
    // Infinite and NaN solutions are serialised as null ("nan" and "inf" are floats to pydantic).
    {"/multiply", R"({"a":1e308,"b":10.0})", 200, R"({"solution":null})"},
    {"/cos", R"({"radians":"nan"})", 200, R"({"solution":null})"},
    {"/power", R"({"a":2.0,"b":"inf"})", 200, R"({"solution":null})"},
    // Keyword arguments that do not fit the signature (the first unexpected one in field order).
    {"/add", R"({"a":1.0})", 500,
     R"({"detail":"add() missing 1 required positional argument: 'b'"})"},
    {"/add", R"({})", 500,
     R"({"detail":"add() missing 2 required positional arguments: 'a' and 'b'"})"},
    {"/add", R"({"b":1.0,"base":2.0})", 500,
     R"({"detail":"add() got an unexpected keyword argument 'base'"})"},
    {"/log", R"({"a":1.0,"b":2.0,"radians":3.0})", 500,
     R"({"detail":"log() got an unexpected keyword argument 'b'"})"},
    {"/pi", R"({"a":1.0})", 500, R"({"detail":"pi() got an unexpected keyword argument 'a'"})"},
    {"/sin", R"({"a":null})", 500,
     R"({"detail":"sin() missing 1 required positional argument: 'radians'"})"},
    // Math errors.
    {"/divide", R"({"a":1.0,"b":0.0})", 500, R"({"detail":"float division by zero"})"},
    {"/log", R"({"a":0.0,"base":1.0})", 500, R"({"detail":"math domain error"})"},
    {"/log", R"({"a":2.0,"base":-0.5})", 500, R"({"detail":"float division by zero"})"},
    {"/log", R"({"a":2.0,"base":-1.5})", 500, R"({"detail":"math domain error"})"},
    {"/sin", R"({"radians":"-inf"})", 500, R"({"detail":"math domain error"})"},
    {"/power", R"({"a":0.0,"b":-3.0})", 500,
     R"({"detail":"0.0 cannot be raised to a negative power"})"},
    {"/power", R"({"a":10.0,"b":400.0})", 500,
     R"x({"detail":"(34, 'Numerical result out of range')"})x"},
    // A negative base to a fractional power is complex, which the response model rejects.
    {"/power", R"({"a":-8.0,"b":-1.5})", 500,
     R"({"detail":"1 validation error for MultiVerseMathHardResponse\nsolution\n  Input should )"
     R"(be a valid number [type=float_type, input_value=(1.7319121124709868e-16+2.82842712474)"
     R"(61903j), input_type=complex]\n    For further information visit )"
     R"(https://errors.pydantic.dev/2.13/v/float_type"})"},
    // Unknown functions; POST to a path that only has a GET route reaches the catch-all too.
    {"/sqrt", R"({"a":4.0})", 404, R"({"detail":"Function not found"})"},
    {"/reverify_mode", R"({})", 404, R"({"detail":"Function not found"})"},
};

void PrintTo(const ToolCase& c, std::ostream* os) { *os << c.path << " " << c.body; }

class MathTool : public ::testing::TestWithParam<ToolCase> {};

TEST_P(MathTool, AnswersLikeUpstream) {
  const auto& c = GetParam();
  auto r = server().post(c.path, c.body);
  EXPECT_EQ(r.status, c.status) << c.path << " " << c.body << ": " << r.body;
  EXPECT_EQ(r.body, c.answer) << c.path << " " << c.body;
}

INSTANTIATE_TEST_SUITE_P(Upstream, MathTool, ::testing::ValuesIn(kToolCases), [](const auto& info) {
  return std::string(info.param.path + 1) + "_" + std::to_string(info.index);
});

TEST(MathToolValidation, BodiesAreValidatedBeforeTheFunctionIsLookedUp) {
  auto r = server().post("/add", R"({"a":"two","b":1})");
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(json::parse(r.body).at("detail").at(0).at("loc"), json::parse(R"(["body","a"])"));
  EXPECT_EQ(server().post("/sqrt", R"({"a":[1]})").status, 422);
  EXPECT_EQ(server().post("/add", "").status, 422);
  EXPECT_EQ(server().post("/add", "not json").status, 400);
}

// ---- verify ----------------------------------------------------------------------------------

std::string call(const std::string& name, const std::string& id, const std::string& args) {
  json::object o{{"type", "function_call"}, {"call_id", id}, {"name", name}, {"arguments", args}};
  return json::serialize(o);
}
std::string output(const std::string& id, const std::string& text) {
  json::object o{{"type", "function_call_output"}, {"call_id", id}, {"output", text}};
  return json::serialize(o);
}
std::string message(const std::string& text) {
  json::object part{{"type", "output_text"}, {"text", text}, {"annotations", json::array{}}};
  json::object o{{"type", "message"},
                 {"role", "assistant"},
                 {"id", "msg_1"},
                 {"status", "completed"},
                 {"content", json::array{part}}};
  return json::serialize(o);
}

std::string verify_body(const std::string& items, const std::string& ground_truth_json,
                        const std::string& more = R"("id":1,"depth":1,"breadth":"1")") {
  return R"({"responses_create_params":{"input":[{"role":"user","content":"add 1 and 3"}]},)"
         R"("response":{"id":"resp_1","created_at":1.0,"model":"m","object":"response",)"
         R"("output":[)" +
         items + R"(],"parallel_tool_calls":true,"tool_choice":"auto","tools":[]},)" +
         R"("ground_truth":)" + ground_truth_json + "," + more + "}";
}

struct VerifyCase {
  const char* name;
  std::string items;
  const char* ground_truth;  // the JSON of the request field
  int status;
  double reward;           // when 200
  const char* error = "";  // the 500 body otherwise
};

const std::string kAdd = call("add", "call_1", R"({"a":1,"b":3})");

const VerifyCase kVerifyCases[] = {
    // Upstream's test_verify: add(1, 3) answered 5.2, ground truth "[5.2]", breadth "1".
    {"upstream", kAdd + "," + output("call_1", R"({"solution": 5.2})") + "," + message("5.2"),
     R"("[5.2]")", 200, 1.0},
    {"value_missing", kAdd + "," + output("call_1", R"({"solution": 5.2})"), R"("[5.2, 4.0]")", 200,
     0.0},
    {"plain_arithmetic_is_wrong", kAdd + "," + output("call_1", R"({"solution": 5.2})"),
     R"("[4.0]")", 200, 0.0},
    {"any_order_and_repeats",
     call("add", "c1", "{}") + "," + output("c1", R"({"solution":2.0})") + "," +
         call("pi", "c2", "{}") + "," + output("c2", R"({"solution":2.718281828459045})"),
     R"("[2.718281828459045, 2, 2.0]")", 200, 1.0},
    // Only function_call_output items count; calls and messages do not.
    {"messages_do_not_count", message("5.2"), R"("[5.2]")", 200, 0.0},
    {"empty_ground_truth", "", R"("[]")", 200, 1.0},
    // A tool output whose solution cannot be read becomes None, which None in the ground truth
    // matches; a string solution goes through float().
    {"error_output_is_none", output("c", R"({"detail":"float division by zero"})"), R"("[null]")",
     200, 1.0},
    {"null_solution_is_none", output("c", R"({"solution":null})"), R"("[null]")", 200, 1.0},
    {"unparsable_output_is_none", output("c", "Internal Server Error"), R"("[null]")", 200, 1.0},
    {"string_solution", output("c", R"({"solution":" 5.2 "})"), R"("[5.2]")", 200, 1.0},
    {"true_is_one", output("c", R"({"solution":1.0})"), R"("[true]")", 200, 1.0},
    // json.loads returns one shared object for every NaN literal, and `in` tries identity first:
    // a NaN solution matches a NaN ground truth; float("nan") makes a new object, which does not.
    {"nan_literal_is_the_same_object", output("c", R"({"solution":NaN})"), R"("[NaN]")", 200, 1.0},
    {"nan_from_text_never_matches", output("c", R"({"solution":"nan"})"), R"("[NaN]")", 200, 0.0},
    {"string_never_matches_a_float", output("c", R"({"solution":5.2})"), R"("[\"5.2\"]")", 200,
     0.0},
    // Iterating a ground truth that is not a list: a dict's keys, a string's characters.
    {"dict_iterates_keys", output("c", R"({"solution":1})"), R"("{}")", 200, 1.0},
    {"string_iterates_characters", output("c", R"({"solution":5})"), R"("\"5\"")", 200, 0.0},
    {"number_is_not_iterable", output("c", R"({"solution":5})"), R"("5")", 500, 0.0,
     R"("TypeError: 'int' object is not iterable")"},
    {"ground_truth_is_json_text", "", R"("[5.2")", 500, 0.0,
     R"x("JSONDecodeError: Expecting ',' delimiter: line 1 column 5 (char 4)")x"},
    // A list passes the request model but json.loads needs a string.
    {"list_ground_truth", output("c", R"({"solution":5.2})"), R"([5.2])", 500, 0.0,
     R"("TypeError: the JSON object must be str, bytes or bytearray, not list")"},
};

void PrintTo(const VerifyCase& c, std::ostream* os) { *os << c.name; }

class MathVerify : public ::testing::TestWithParam<VerifyCase> {};

TEST_P(MathVerify, RewardsLikeUpstream) {
  const auto& c = GetParam();
  auto r = server().post("/verify", verify_body(c.items, c.ground_truth));
  ASSERT_EQ(r.status, c.status) << r.body;
  if (c.status != 200) {
    EXPECT_EQ(r.body, c.error);
    return;
  }
  auto o = json::parse(r.body).as_object();
  EXPECT_EQ(o.at("reward").as_double(), c.reward);
  // Only the base fields are echoed: not ground_truth, id, depth or breadth.
  ASSERT_EQ(o.size(), 3u) << r.body;
  EXPECT_TRUE(o.contains("responses_create_params") && o.contains("response"));
}

INSTANTIATE_TEST_SUITE_P(Upstream, MathVerify, ::testing::ValuesIn(kVerifyCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(MathVerifyValidation, RequiredFieldsAndTheGroundTruthUnion) {
  auto r = server().post("/verify", verify_body("", R"("[]")", R"("id":1,"depth":1)"));
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(json::parse(r.body).at("detail").at(0).at("loc"), json::parse(R"(["body","breadth"])"));
  r = server().post("/verify", verify_body("", R"("[]")", R"("id":1,"depth":1,"breadth":"x")"));
  EXPECT_EQ(r.status, 422);

  // Neither member of list[float] | str accepts a number: one error per member.
  r = server().post("/verify", verify_body("", "5"));
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.body, R"({"detail":[{"type":"list_type","loc":["body","ground_truth","list[float]"],)"
                    R"("msg":"Input should be a valid list","input":5},{"type":"string_type",)"
                    R"("loc":["body","ground_truth","str"],"msg":"Input should be a valid string",)"
                    R"("input":5}]})");
  r = server().post("/verify", verify_body("", R"([1.0,"x"])"));
  EXPECT_EQ(r.status, 422);
  auto detail = json::parse(r.body).at("detail").as_array();
  ASSERT_EQ(detail.size(), 2u);
  EXPECT_EQ(detail[0].at("loc"), json::parse(R"(["body","ground_truth","list[float]",1])"));
  EXPECT_EQ(detail[1].at("loc"), json::parse(R"(["body","ground_truth","str"])"));
}

// ---- upstream's example rows (conformance data) --------------------------------------------

// Evaluates the expressions of one of upstream's questions ("Get me the values for (9.0 - 9.0),
// sin(5.0), and pi using only the given tools.") by calling the server's tools, as a model
// following the prompt would; Python's precedence decides the tree (** binds tightest).
class QuestionEvaluator {
 public:
  explicit QuestionEvaluator(std::string_view text) : s_(text) {}

  // The value of each listed expression; every tool answer is kept in `outputs`.
  std::vector<double> values() {
    std::vector<double> out;
    for (auto intro : {"Get me the values for ", "Get me the value for "})
      if (s_.starts_with(intro)) i_ = std::string_view(intro).size();
    for (;;) {
      std::size_t calls = outputs.size();
      double v = sum();
      // A bare number is reported through return_constant, the tool that returns its input.
      if (outputs.size() == calls) v = tool("return_constant", {{"a", v}});
      out.push_back(v);
      if (take(" using only the given tools.")) break;
      if (!take(", and ") && !take(", ") && !take(" and ")) throw std::runtime_error(rest());
    }
    return out;
  }
  json::array outputs;

 private:
  double sum() {
    double v = product();
    for (;;) {
      if (take(" + "))
        v = tool("add", {{"a", v}, {"b", product()}});
      else if (take(" - "))
        v = tool("subtract", {{"a", v}, {"b", product()}});
      else
        return v;
    }
  }
  double product() {
    double v = power();
    for (;;) {
      if (take(" * "))
        v = tool("multiply", {{"a", v}, {"b", power()}});
      else if (take(" / "))
        v = tool("divide", {{"a", v}, {"b", power()}});
      else
        return v;
    }
  }
  double power() {
    double v = unary();
    if (take(" ** ")) return tool("power", {{"a", v}, {"b", power()}});
    return v;
  }
  double unary() {
    if (take("-")) return tool("negate", {{"a", unary()}});
    return atom();
  }
  double atom() {
    if (take("pi")) return tool("pi", {});
    if (take("sin(")) return closed(tool("sin", {{"radians", sum()}}));
    if (take("cos(")) return closed(tool("cos", {{"radians", sum()}}));
    if (take("log(")) {
      double a = sum();
      if (!take(", ")) throw std::runtime_error(rest());
      return closed(tool("log", {{"a", a}, {"base", sum()}}));
    }
    if (take("(")) return closed(sum());
    std::size_t end = i_;
    while (end < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[end])) || s_[end] == '.'))
      ++end;
    if (end == i_) throw std::runtime_error(rest());
    double v = std::stod(std::string(s_.substr(i_, end - i_)));
    i_ = end;
    return v;
  }
  double closed(double v) {
    if (!take(")")) throw std::runtime_error(rest());
    return v;
  }
  bool take(std::string_view token) {
    if (!s_.substr(i_).starts_with(token)) return false;
    i_ += token.size();
    return true;
  }
  std::string rest() const { return "cannot parse: " + std::string(s_.substr(i_)); }

  double tool(const std::string& name, json::object args) {
    auto r = server().post("/" + name, json::serialize(args));
    EXPECT_EQ(r.status, 200) << name << " " << json::serialize(args) << ": " << r.body;
    std::string id = "call_" + std::to_string(outputs.size());
    outputs.push_back(json::parse(output(id, r.body)));
    return gym::python_compat::py_json_loads(r.body).at("solution").to_number<double>();
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

std::string upstream_example() {
  return gym::test::conformance_dir() + "/math_advanced_calculations/example.jsonl";
}

TEST(MathUpstreamExamples, TheToolsReproduceEveryGroundTruthAndVerifyRewardsIt) {
  ASSERT_TRUE(std::filesystem::exists(upstream_example()))
      << "NeMo Gym's conformance data is missing: " << upstream_example()
      << " (set GYM_CONFORMANCE_DIR to the folder holding <env>/example.jsonl)";
  auto rows = gym::test::read_jsonl(upstream_example());
  ASSERT_EQ(rows.size(), 5u);
  std::size_t values = 0;
  for (const auto& row : rows) {
    const auto& input = row.at("responses_create_params").at("input").as_array();
    std::string question(input.back().at("content").as_string());
    SCOPED_TRACE(question);
    QuestionEvaluator evaluator(question);
    std::vector<double> got = evaluator.values();
    auto truth = gym::python_compat::py_json_loads(row.at("ground_truth").as_string()).as_array();
    ASSERT_EQ(got.size(), truth.size());
    for (std::size_t k = 0; k < got.size(); ++k, ++values)
      EXPECT_EQ(got[k], truth[k].to_number<double>()) << "value " << k;  // bit for bit

    // The row as upstream wrote it, answered with every tool output: reward 1.0; without the
    // outputs that gave the last value: 0.0.
    json::object request = row;
    request["response"] = json::object{{"id", "r"}, {"output", evaluator.outputs}};
    auto r = server().post("/verify", json::serialize(request));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(json::parse(r.body).at("reward").as_double(), 1.0);
    json::array without_last;
    for (const auto& o : evaluator.outputs) {
      auto solution = gym::python_compat::py_json_loads(o.at("output").as_string()).at("solution");
      if (solution.to_number<double>() != got.back()) without_last.push_back(o);
    }
    request["response"] = json::object{{"id", "r"}, {"output", without_last}};
    r = server().post("/verify", json::serialize(request));
    EXPECT_EQ(json::parse(r.body).at("reward").as_double(), 0.0);
  }
  EXPECT_EQ(values, 15u);
}

TEST(MathRoutes, RegisteredUnderTheUpstreamClassName) {
  ASSERT_NE(server().impl(), nullptr);
  EXPECT_EQ(server().impl()->class_name, "MultiVerseMathHardResourcesServer");
  EXPECT_EQ(server().post("/seed_session", "{}").body, "{}");
}

// ---- this folder's example data --------------------------------------------------------------

// data/example_rollouts.jsonl (recorded through gym eval run with the replay model) verifies to
// its recorded rewards when each row is sent with its example.jsonl row.
TEST(MathExampleData, OwnExampleRolloutsKeepTheirRewards) {
  const auto dir = std::filesystem::path(GYM_SOURCE_ROOT) / "environments" /
                   "math_advanced_calculations" / "data";
  const auto inputs = gym::test::read_jsonl(dir / "example.jsonl");
  const auto rollouts = gym::test::read_jsonl(dir / "example_rollouts.jsonl");
  ASSERT_EQ(inputs.size(), 5u);
  ASSERT_EQ(rollouts.size(), 5u);
  const std::vector<double> expected{1, 1, 1, 0, 0};
  for (std::size_t line = 0; line < rollouts.size(); ++line) {
    const auto& rollout = rollouts[line];
    auto task = static_cast<std::size_t>(rollout.at("_ng_task_index").to_number<std::int64_t>());
    ASSERT_EQ(task, line);  // sorted by task index
    json::object request = inputs.at(task);
    request["responses_create_params"] = rollout.at("responses_create_params");
    request["response"] = rollout.at("response");
    auto r = server().post("/verify", json::serialize(request));
    ASSERT_EQ(r.status, 200) << r.body;
    auto o = json::parse(r.body).as_object();
    EXPECT_EQ(o.at("reward"), rollout.at("reward")) << "task " << task;
    EXPECT_EQ(o.at("reward").as_double(), expected[task]) << "task " << task;
  }
}

}  // namespace
