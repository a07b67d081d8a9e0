// gpqa_diamond's /verify (upstream resources_servers/gpqa_diamond): upstream's documented cases
// (its tests/test_app.py) and the quirks of its extraction, table-driven, through the routes
// gpqa_diamond_environment() gives a resources server. Expectations checked against upstream's
// functions under CPython.
#include "builtin_environments.h"
#include "core/json_text.h"
#include "environment_routes.h"
#include "http/router.h"
#include "servers/registry.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <memory>
#include <optional>
#include <string>

namespace json = boost::json;
using gym::http::Method;

namespace {

class GpqaDiamond : public ::testing::Test {
 protected:
  gym::http::Response verify(const json::object& body) const {
    return routes_.post_json("/verify", body);
  }

  gym::test::EnvironmentRoutes routes_{gym::environments::gpqa_diamond_environment()};
};

json::object message(const std::string& text) {
  return {
      {"id", "msg"},
      {"type", "message"},
      {"role", "assistant"},
      {"status", "completed"},
      {"content", json::array{json::object{
                      {"type", "output_text"}, {"text", text}, {"annotations", json::array{}}}}}};
}

// A verify body: one assistant message and the row fields in `fields` (JSON object text).
json::object request(const std::string& text, const std::string& fields) {
  json::object body = json::parse(fields).as_object();
  body["responses_create_params"] = json::object{{"input", "Question?"}};
  body["response"] = json::object{{"id", "resp"}, {"output", json::array{message(text)}}};
  return body;
}

constexpr const char* kAbcd = R"("options":[{"A":"optA"},{"B":"optB"},{"C":"optC"},{"D":"optD"}])";

struct Case {
  const char* name;
  std::string text;
  std::string fields;  // row fields besides the base ones
  double reward;
  std::optional<std::string> extracted;  // null when nothing is extracted
};

}  // namespace

TEST_F(GpqaDiamond, Extraction) {
  const std::string abcd = kAbcd;
  const std::vector<Case> cases = {
      // upstream tests/test_app.py
      {"template metadata first", "Answer: A\nFinal Choice: c",
       "{" + abcd +
           R"(,"expected_answer":"C","grading_mode":"strict_single_letter_boxed",)"
           R"x("template_metadata":{"output_regex":"Final Choice:\\s*([A-Za-z])"}})x",
       1.0, "C"},
      {"answer colon", "Reasoning...\nAnswer: C", "{" + abcd + R"(,"expected_answer":"C"})", 1.0,
       "C"},
      {"boxed", "Final: \\boxed{C}", "{" + abcd + R"(,"expected_answer":"C"})", 1.0, "C"},
      {"letter outside the options", "Answer: E", "{" + abcd + R"(,"expected_answer":"C"})", 0.0,
       std::nullopt},
      // the rest of the rule
      {"any case after Answer", "so **answer:** d", "{" + abcd + R"(,"expected_answer":" d "})",
       1.0, "D"},
      {"a letter must stand alone", "Answer: Cat", "{" + abcd + R"(,"expected_answer":"C"})", 0.0,
       std::nullopt},
      {"the last box wins", "\\boxed{A} no, \\boxed{C}", "{" + abcd + R"(,"expected_answer":"C"})",
       1.0, "C"},
      {"a box without a letter falls back", "\\boxed{42}\nAnswer: b",
       "{" + abcd + R"(,"expected_answer":"B"})", 1.0, "B"},
      {"a box letter outside the options ends the search", "Answer: B then \\boxed{E}",
       "{" + abcd + R"(,"expected_answer":"B"})", 0.0, std::nullopt},
      {"the box stops at the first closing brace", "\\boxed{\\text{B}}",
       "{" + abcd + R"(,"expected_answer":"B"})", 1.0, "B"},
      {"the last standalone capital in the box", "\\boxed{B or C}",
       "{" + abcd + R"(,"expected_answer":"C"})", 1.0, "C"},
      {"lower case in a box is no letter", "\\boxed{c}", "{" + abcd + R"(,"expected_answer":"C"})",
       0.0, std::nullopt},
      {"without options any letter stands", "\\boxed{Z}", R"({"expected_answer":"z"})", 1.0, "Z"},
      {"one upper-case character of any script", "\\boxed{Ⅳ}", R"({"expected_answer":"B"})", 0.0,
       "Ⅳ"},
      {"the grading mode is not used", "\\boxed{optB}",
       "{" + abcd + R"(,"expected_answer":"B","grading_mode":"lenient_boxed"})", 0.0, std::nullopt},
      {"no gold, no reward", "Answer: A", "{" + abcd + "}", 0.0, "A"},
      {"an empty text still runs the custom pattern", "",
       R"({"options":[{"A":" "},{"B":"b"}],"expected_answer":"A",)"
       R"x("template_metadata":{"output_regex":"(z?)"}})x",
       1.0, "A"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto res = verify(request(c.text, c.fields));
    ASSERT_EQ(res.status, 200) << res.body;
    auto out = json::parse(res.body).as_object();
    EXPECT_EQ(out.at("reward").to_number<double>(), c.reward);
    EXPECT_EQ(out.at("extracted_answer"),
              c.extracted ? json::value(*c.extracted) : json::value(nullptr));
  }
}

TEST_F(GpqaDiamond, EchoesMcqaFields) {
  auto res =
      verify(request("Answer: b", "{" + std::string(kAbcd) +
                                      R"(,"expected_answer":" b ","uuid":"u","metadata":{}})"));
  ASSERT_EQ(res.status, 200) << res.body;
  auto out = json::parse(res.body).as_object();
  std::vector<std::string> keys;
  for (const auto& kv : out) keys.emplace_back(kv.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"responses_create_params", "response", "reward",
                                            "expected_answer", "extracted_answer"}));
  EXPECT_EQ(out.at("expected_answer"), "B");
}

TEST_F(GpqaDiamond, FailsWhereUpstreamFails) {
  // One pattern only: a list goes to re.findall as it is.
  auto res = verify(request("x", R"x({"template_metadata":{"output_regex":["(x)"]}})x"));
  EXPECT_EQ(res.status, 500);
  EXPECT_EQ(res.body, R"("TypeError: unhashable type: 'list'")");
  res = verify(request("x", R"({"template_metadata":{"output_regex":null}})"));
  EXPECT_EQ(res.body, R"("TypeError: first argument must be string or compiled pattern")");
  // mcqa's request model: the markdown mode is for configs only.
  res = verify(request("x", R"({"grading_mode":"lenient_answer_colon_md"})"));
  EXPECT_EQ(res.status, 422);
  EXPECT_EQ(json::parse(res.body).at("detail").at(0).at("type"), "literal_error");
}

TEST_F(GpqaDiamond, BaseRoutesAndMcqaMetrics) {
  EXPECT_EQ(routes_.impl().class_name, "GPQADiamondResourcesServer");
  EXPECT_EQ(routes_.call(Method::get, "/reverify_mode").body, R"("unknown")");
  EXPECT_EQ(routes_.call(Method::post, "/seed_session", "{}").body, "{}");
  auto res = routes_.call(Method::post, "/aggregate_metrics",
                          R"({"verify_responses":[{"reward":1.0,"extracted_answer":"A"},)"
                          R"({"_ng_task_index":1,"reward":0.0,"extracted_answer":null}]})");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(
      gym::core::render_json(json::parse(res.body).at("key_metrics")),
      R"({"mean/reward":0.5,"pass@1[avg-of-1]/accuracy":50.0,"pass@1[avg-of-1]/no_answer":50.0,"pass@1/no_answer":50.0,"majority@1/accuracy":50.0,"pass@1/accuracy":50.0})");
}
