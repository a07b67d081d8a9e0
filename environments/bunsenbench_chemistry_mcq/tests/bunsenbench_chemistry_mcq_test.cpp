// bunsenbench_chemistry_mcq (upstream resources_servers/bunsenbench_chemistry_mcq): upstream's
// documented cases (its tests/test_app.py) restated as tables — answer extraction, chemistry
// normalisation, error modes, /verify through the routes and the grouped aggregate metrics —
// plus quirks of the rule. Expectations checked against upstream's functions under CPython.
#include "builtin_environments.h"
#include "bunsenbench_chemistry_mcq/bunsen_extract.h"
#include "core/json_text.h"
#include "environment_routes.h"
#include "http/router.h"
#include "servers/registry.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace json = boost::json;
using gym::environments::bunsen_error_mode;
using gym::environments::bunsen_extract_answer;
using gym::environments::bunsen_normalize_chemistry_text;
using gym::environments::BunsenOptions;
using gym::environments::McqaLetters;
using gym::http::Method;

namespace {

const BunsenOptions kWaterCo2 = {{"A", "H2O"}, {"B", "CO2"}};
const McqaLetters kAB = {"A", "B"};

std::string shown(const std::optional<std::string>& v) { return v ? *v : "<none>"; }

// An assistant message with `text` (no part when empty) and optionally a refusal part.
json::object response(const std::string& text, const std::string& item_status = "completed",
                      const std::optional<std::string>& refusal = std::nullopt) {
  json::array content;
  if (!text.empty())
    content.push_back(
        json::object{{"type", "output_text"}, {"text", text}, {"annotations", json::array{}}});
  if (refusal) content.push_back(json::object{{"type", "refusal"}, {"refusal", *refusal}});
  return {{"id", "resp_test"},
          {"object", "response"},
          {"output", json::array{json::object{{"id", "msg_test"},
                                              {"type", "message"},
                                              {"role", "assistant"},
                                              {"status", item_status},
                                              {"content", std::move(content)}}}}};
}

class Bunsen : public ::testing::Test {
 protected:
  gym::http::Response post(const std::string& path, const std::string& body) const {
    return routes_.post(path, body);
  }
  gym::http::Response post(const std::string& path, const json::value& body) const {
    return post(path, json::serialize(body));
  }

  // Upstream's _request(text): the H2O/CO2 question, gold B, taxonomy in `metadata`.
  static json::object water_request(const std::string& text) {
    return {
        {"responses_create_params",
         json::object{{"input", json::array{json::object{
                                    {"role", "user"}, {"content", "Question?\nA: H2O\nB: CO2"}}}}}},
        {"response", response(text)},
        {"options", json::array{json::object{{"A", "H2O"}}, json::object{{"B", "CO2"}}}},
        {"expected_answer", "B"},
        {"grading_mode", "lenient_answer_colon"},
        {"metadata",
         json::object{
             {"source", "example"}, {"bct_field", "general"}, {"bct_subfield", "acids_bases"}}}};
  }

  json::object verify(const json::object& body) const {
    auto res = post("/verify", body);
    EXPECT_EQ(res.status, 200) << res.body;
    return res.status == 200 ? json::parse(res.body).as_object() : json::object{};
  }

  json::object aggregate(const std::string& verify_responses) const {
    auto res = post("/aggregate_metrics", R"({"verify_responses":)" + verify_responses + "}");
    EXPECT_EQ(res.status, 200) << res.body;
    return res.status == 200 ? json::parse(res.body).as_object() : json::object{};
  }

  gym::test::EnvironmentRoutes routes_{gym::environments::bunsenbench_chemistry_mcq_environment()};
};

struct ExtractCase {
  std::string text;
  std::optional<std::string> letter;
};

}  // namespace

TEST(BunsenExtract, AnswerFormats) {
  const std::vector<ExtractCase> cases = {
      // upstream test_extract_bunsen_answer_formats
      {"Reasoning\nAnswer: B", "B"},
      {"Reasoning\n- Answer: B", "B"},
      {"Reasoning\n1. Answer: B", "B"},
      {"Reasoning sentence. Answer: B", "B"},
      {"B\n\nReasoning follows.", "B"},
      {"Final \\boxed{\\text{B}}", "B"},
      {"<answer>CO2</answer>", "B"},
      {"<choice>CO2</choice>", "B"},
      {"<response>CO₂</response>", "B"},
      {"The answer is B.", "B"},
      {"Final answer:\nCO2", "B"},
      // test_extract_bunsen_answer_rejects_ambiguous_letters
      {"Answer: A or B", std::nullopt},
      {"I choose A and B", std::nullopt},
      {"<choices><choice>H2O</choice><choice>CO2</choice></choices>", std::nullopt},
      // test_extract_bunsen_answer_uses_latest_candidate
      {"<answer>H2O</answer>\nReasoning\nAnswer: B", "B"},
      // more of the rule
      {"Answer: (a)", "A"},
      {"answer: option b.", "B"},
      {"<ANSWER> h2o </Answer>", std::nullopt},  // option texts keep their case
      // Entities are decoded for the comparison only: "<CO2>" is no option text.
      {"<final-answer>&lt;CO2&gt;</final-answer>", std::nullopt},
      {"<final-answer>&#67;O&#x32;</final-answer>", "B"},
      {"\\boxed{\\mathrm{CO_2}}", std::nullopt},
      {"\\boxed  {CO2} and then \\boxed{A", "B"},  // an unclosed box ends the boxes
      {"my answer is: B", std::nullopt},
      {"Answer: C", std::nullopt},   // not an option
      {"no answer here\nA", "A"},    // the last line
      {"H2O\nsomething else", "A"},  // then the first
  };
  for (const auto& c : cases)
    EXPECT_EQ(shown(bunsen_extract_answer(c.text, kWaterCo2, kAB)), shown(c.letter)) << c.text;
}

TEST(BunsenExtract, ChemistryMatchingKeepsCaseAndBrackets) {
  // test_chemistry_answer_matching_preserves_case
  const BunsenOptions elements = {{"A", "Na"}, {"B", "Ne"}, {"C", "CO2"}};
  const McqaLetters abc = {"A", "B", "C"};
  EXPECT_EQ(shown(bunsen_extract_answer("<answer>Na</answer>", elements, abc)), "A");
  EXPECT_EQ(shown(bunsen_extract_answer("<answer>na</answer>", elements, abc)), "<none>");
  EXPECT_EQ(shown(bunsen_extract_answer("<answer>CO₂</answer>", elements, abc)), "C");
  EXPECT_EQ(shown(bunsen_extract_answer("<answer>co₂</answer>", elements, abc)), "<none>");
  // test_extract_bunsen_answer_preserves_bracketed_option_text
  const std::string a = "[START_SMILES]Cn1c(=O)c2c(nc(N3CCOCC3)n2CCCNC2=NCCC2)n(C)c1=O[END_SMILES]";
  const std::string b =
      "[START_SMILES]O=C(N=S(=O)(CCCO)CCCO)c1cncc(C#Cc2cccc(NC(=O)c3cccc(C(F)(F)F)c3)c2)c1[END_"
      "SMILES]";
  const BunsenOptions smiles = {{"A", a}, {"B", b}};
  EXPECT_EQ(shown(bunsen_extract_answer("<choice>" + a + "</choice>", smiles, kAB)), "A");
  EXPECT_EQ(shown(bunsen_extract_answer("<choice>" + b + "</choice>", smiles, kAB)), "B");
}

TEST(BunsenExtract, ChemistryNormalisation) {
  // test_chemistry_normalization
  EXPECT_EQ(bunsen_normalize_chemistry_text("CO₂"), "CO2");
  EXPECT_EQ(bunsen_normalize_chemistry_text("Na⁺"), "Na+");
  EXPECT_EQ(bunsen_normalize_chemistry_text("SO₄²⁻ + 2×H⁺"), "SO42- + 2xH+");
  EXPECT_EQ(bunsen_normalize_chemistry_text("ΔG = −10 kJ·mol⁻¹"), "ΔG = -10 kJ.mol-1");
  // entities, format characters, micro signs, whitespace
  EXPECT_EQ(bunsen_normalize_chemistry_text("H&#8322;O &amp; CO\u200b2"), "H2O & CO2");
  EXPECT_EQ(bunsen_normalize_chemistry_text("  5\u00a0µm  —  10 μL "), "5 um - 10 uL");
}

TEST(BunsenErrorMode, Classification) {
  struct Case {
    const char* name;
    json::object response;
    std::string text;
    std::optional<std::string> pred;
    std::string mode;
  };
  const std::string unclosed = "<think>Let me reason about this step by step and consider";
  json::object truncated = response("Some partial reasoning");
  truncated["incomplete_details"] = json::object{{"reason", "max_output_tokens"}};
  json::object incomplete_response = response("Some partial reasoning");
  incomplete_response["status"] = "incomplete";
  const std::vector<Case> cases = {
      // upstream test_classify_error_mode_*
      {"correct", response("<choice>CO2</choice>"), "<choice>CO2</choice>", "B", "correct"},
      {"wrong", response("<choice>H2O</choice>"), "<choice>H2O</choice>", "A", "wrong_answer"},
      {"refusal phrase", response("I'm sorry, but I can't help with that."),
       "I'm sorry, but I can't help with that.", std::nullopt, "refusal"},
      {"refusal part", response("", "completed", "I cannot assist with this request."), "",
       std::nullopt, "refusal"},
      {"unclosed think", response(unclosed), unclosed, std::nullopt, "early_termination"},
      {"max_output_tokens", truncated, "Some partial reasoning", std::nullopt, "early_termination"},
      {"incomplete item", response("Some partial reasoning", "incomplete"),
       "Some partial reasoning", std::nullopt, "early_termination"},
      {"incomplete response", incomplete_response, "Some partial reasoning", std::nullopt,
       "early_termination"},
      {"malformed choice", response("<choice>none of the above</choice>"),
       "<choice>none of the above</choice>", std::nullopt, "malformed_choice"},
      {"format violation",
       response(
           "I think the answer relates to carbon but I'm not stating it in the required form."),
       "I think the answer relates to carbon but I'm not stating it in the required form.",
       std::nullopt, "format_violation"},
      // the order of the tests
      {"truncation before a refusal phrase", truncated, "As an AI model, I must decline",
       std::nullopt, "early_termination"},
      {"a choice inside <choices> is no answer", response(""),
       "<choices><choice>x</choice></choices>", std::nullopt, "format_violation"},
  };
  for (const auto& c : cases)
    EXPECT_EQ(bunsen_error_mode(c.response, c.text, c.pred, "B"), c.mode) << c.name;
}

TEST_F(Bunsen, VerifyRecordsErrorModeAndGroups) {
  // upstream test_verify_records_error_mode
  EXPECT_EQ(verify(water_request("<choice>CO2</choice>")).at("error_mode"), "correct");
  EXPECT_EQ(verify(water_request("<choice>H2O</choice>")).at("error_mode"), "wrong_answer");
  EXPECT_EQ(verify(water_request("<choice>maybe carbon dioxide?</choice>")).at("error_mode"),
            "malformed_choice");
  // test_verify_preserves_group_metadata
  auto out = verify(water_request("<choice>B</choice>"));
  EXPECT_EQ(out.at("reward"), 1.0);
  EXPECT_EQ(out.at("extracted_answer"), "B");
  EXPECT_EQ(out.at("source"), "example");
  EXPECT_EQ(out.at("bct_field"), "general");
  EXPECT_EQ(out.at("bct_subfield"), "acids_bases");
  // test_verify_wrong_answer_and_no_answer_are_not_rewarded
  out = verify(water_request("Reasoning\nAnswer: A"));
  EXPECT_EQ(out.at("reward"), 0.0);
  EXPECT_EQ(out.at("extracted_answer"), "A");
  EXPECT_EQ(out.at("no_answer"), false);
  out = verify(water_request("I need more information."));
  EXPECT_EQ(out.at("reward"), 0.0);
  EXPECT_TRUE(out.at("extracted_answer").is_null());
  EXPECT_EQ(out.at("no_answer"), true);
  EXPECT_EQ(out.at("error_mode"), "format_violation");
  // test_verify_ignores_request_supplied_output_regex
  auto with_pattern = water_request("B\nAnswer: A");
  with_pattern["template_metadata"] = json::object{{"output_regex", "(B)"}};
  out = verify(with_pattern);
  EXPECT_EQ(out.at("reward"), 0.0);
  EXPECT_EQ(out.at("extracted_answer"), "A");
}

TEST_F(Bunsen, VerifyAcceptsChoicesAndTopLevelTaxonomy) {
  // upstream test_verify_accepts_choices_and_top_level_metadata
  json::object body{
      {"responses_create_params",
       json::object{{"input", json::array{json::object{{"role", "user"}, {"content", "Q?"}}}}}},
      {"response", response("<answer>Water, H₂O</answer>")},
      {"choices", json::array{"Water, H2O", "CO2"}},
      {"expected_answer", "A"},
      {"source", "gpqa_diamond"},
      {"bct_field", "physical"},
      {"bct_subfield", "thermodynamics"}};
  auto out = verify(body);
  EXPECT_EQ(out.at("reward"), 1.0);
  EXPECT_EQ(out.at("extracted_answer"), "A");
  EXPECT_EQ(out.at("source"), "gpqa_diamond");
  EXPECT_EQ(out.at("bct_field"), "physical");
  EXPECT_EQ(out.at("bct_subfield"), "thermodynamics");

  // Objects name their letters and texts; the gold may be an option text.
  body["choices"] =
      json::parse(
          R"([{"label":"","key":"c","content":"Water, H2O"},{"letter":"D","choice":"CO2"},
          {"letter":"AB","text":"x"}, 7.5])")
          .as_array();
  body["choices"].as_array().pop_back();  // 7.5 is no str and no dict: see BadBodies
  body["expected_answer"] = "\\text{CO2}";
  body["response"] = response("<answer>d</answer>");
  out = verify(body);
  EXPECT_EQ(out.at("expected_answer"), "D");
  EXPECT_EQ(out.at("extracted_answer"), "D");
  EXPECT_EQ(out.at("reward"), 1.0);
}

TEST_F(Bunsen, VerifyEcho) {
  auto body = water_request("<choice>CO2</choice>");
  body["uuid"] = "bunsen:1";
  body["metadata"].as_object()["bunsen_id"] = "bunsen:1";
  auto out = verify(body);
  std::vector<std::string> keys;
  for (const auto& kv : out) keys.emplace_back(kv.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"responses_create_params", "response", "reward",
                                            "expected_answer", "extracted_answer", "uuid",
                                            "bunsen_id", "choices", "no_answer", "error_mode",
                                            "source", "bct_field", "bct_subfield", "metadata"}));
  EXPECT_EQ(out.at("uuid"), "bunsen:1");
  EXPECT_EQ(out.at("bunsen_id"), "bunsen:1");
  EXPECT_TRUE(out.at("choices").is_null());
  EXPECT_EQ(out.at("metadata"), body.at("metadata"));
  EXPECT_EQ(routes_.call(Method::get, "/reverify_mode").body, R"("unknown")");
  EXPECT_EQ(routes_.impl().class_name, "BunsenChemResourcesServer");
}

TEST_F(Bunsen, BadBodies) {
  auto body = water_request("B");
  body["choices"] = json::array{"x", 7.5};
  auto res = post("/verify", body);
  EXPECT_EQ(res.status, 422);
  EXPECT_EQ(
      res.body,
      R"({"detail":[{"type":"string_type","loc":["body","choices",1,"str"],"msg":"Input should be a valid string","input":7.5},)"
      R"({"type":"dict_type","loc":["body","choices",1,"dict[str,any]"],"msg":"Input should be a valid dictionary","input":7.5}]})");
  body = water_request("B");
  body["metadata"].as_object()["source"] = 3;  // the response model takes a string or null
  res = post("/verify", body);
  EXPECT_EQ(res.status, 500);
  EXPECT_EQ(
      res.body.rfind(R"("ValidationError: 1 validation error for BunsenChemVerifyResponse)", 0), 0u)
      << res.body;
}

TEST_F(Bunsen, AggregateMetricsByGroup) {
  // upstream test_aggregate_metrics_add_group_breakdowns
  auto out = aggregate(R"([
    {"_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"extracted_answer":"B","source":"mmlu_redux","bct_field":"organic","bct_subfield":"structure"},
    {"_ng_task_index":0,"_ng_rollout_index":1,"reward":0.0,"extracted_answer":"C","source":"mmlu_redux","bct_field":"organic","bct_subfield":"structure"},
    {"_ng_task_index":1,"_ng_rollout_index":0,"reward":1.0,"extracted_answer":"A","source":"gpqa_diamond","bct_field":"physical","bct_subfield":"thermodynamics"}])");
  const auto& metrics = out.at("agent_metrics").as_object();
  EXPECT_EQ(metrics.at("pass@1/accuracy"), 75.0);
  EXPECT_EQ(metrics.at("by_source/mmlu_redux/pass@1/accuracy"), 50.0);
  EXPECT_EQ(metrics.at("by_source/gpqa_diamond/pass@1/accuracy"), 100.0);
  EXPECT_EQ(metrics.at("by_bct_field/physical/pass@1/accuracy"), 100.0);
  EXPECT_EQ(metrics.at("by_bct_subfield/organic/structure/pass@1/accuracy"), 50.0);
  EXPECT_FALSE(metrics.contains("by_source/mmlu_redux/per_sample_aggregate"));
  EXPECT_EQ(out.at("key_metrics").at("pass@1/accuracy"), 75.0);
  // No error_mode recorded: the fallback classes (a reward is correct, an answer wrong).
  EXPECT_EQ(metrics.at("error_modes/correct/count"), 2.0);
  EXPECT_EQ(metrics.at("error_modes/wrong_answer/count"), 1.0);

  // test_aggregate_metrics_bct_subfields_include_parent_field
  out = aggregate(R"([
    {"_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"extracted_answer":"A","bct_field":"biochemistry","bct_subfield":"metabolism"},
    {"_ng_task_index":1,"_ng_rollout_index":0,"reward":0.0,"extracted_answer":"B","bct_field":"preference","bct_subfield":"metabolic_stability"}])");
  const auto& sub = out.at("agent_metrics").as_object();
  EXPECT_EQ(sub.at("by_bct_subfield/biochemistry/metabolism/pass@1/accuracy"), 100.0);
  EXPECT_EQ(sub.at("by_bct_subfield/preference/metabolic_stability/pass@1/accuracy"), 0.0);
  EXPECT_FALSE(sub.contains("by_bct_subfield/metabolism/pass@1/accuracy"));

  // Segments are slugged; a value that is not a string is grouped by its str().
  out = aggregate(R"([
    {"_ng_task_index":0,"reward":1.0,"extracted_answer":"A","source":" MMLU Pro / chem é "},
    {"_ng_task_index":1,"reward":0.0,"extracted_answer":"A","source":2.5},
    {"_ng_task_index":2,"reward":0.0,"extracted_answer":"A","source":"___"}])");
  const auto& slugs = out.at("agent_metrics").as_object();
  EXPECT_TRUE(slugs.contains("by_source/MMLU_Pro____chem/pass@1/accuracy"));
  EXPECT_TRUE(slugs.contains("by_source/2.5/pass@1/accuracy"));
  EXPECT_TRUE(slugs.contains("by_source/unknown/pass@1/accuracy"));
}

TEST_F(Bunsen, AggregateMetricsErrorModes) {
  // upstream test_aggregate_metrics_report_error_mode_breakdown
  auto out = aggregate(R"([
    {"_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"error_mode":"correct"},
    {"_ng_task_index":1,"_ng_rollout_index":0,"reward":0.0,"error_mode":"wrong_answer"},
    {"_ng_task_index":2,"_ng_rollout_index":0,"reward":0.0,"error_mode":"refusal"},
    {"_ng_task_index":3,"_ng_rollout_index":0,"reward":0.0,"error_mode":"early_termination"}])");
  const auto& metrics = out.at("agent_metrics").as_object();
  EXPECT_EQ(metrics.at("error_modes/correct"), 25.0);
  EXPECT_EQ(metrics.at("error_modes/wrong_answer"), 25.0);
  EXPECT_EQ(metrics.at("error_modes/refusal"), 25.0);
  EXPECT_EQ(metrics.at("error_modes/early_termination"), 25.0);
  EXPECT_EQ(metrics.at("error_modes/malformed_choice"), 0.0);
  EXPECT_EQ(metrics.at("error_modes/refusal/count"), 1.0);
  const auto& key = out.at("key_metrics").as_object();
  EXPECT_EQ(key.at("error_modes/refusal"), 25.0);
  // mcqa's key metrics, then pass@k accuracy and the six error modes.
  std::vector<std::string> keys;
  for (const auto& kv : key) keys.emplace_back(kv.key());
  EXPECT_EQ(keys,
            (std::vector<std::string>{
                "mean/reward", "pass@1[avg-of-1]/accuracy", "pass@1[avg-of-1]/no_answer",
                "pass@1/no_answer", "majority@1/accuracy", "pass@1/accuracy", "error_modes/correct",
                "error_modes/wrong_answer", "error_modes/refusal", "error_modes/early_termination",
                "error_modes/malformed_choice", "error_modes/format_violation"}));
  // An unknown mode is counted after the six.
  out = aggregate(R"([{"reward":0.0,"error_mode":"judge_failed"}])");
  EXPECT_EQ(out.at("agent_metrics").at("error_modes/judge_failed"), 100.0);
  auto res = post("/aggregate_metrics",
                  std::string(R"({"verify_responses":[{"reward":0.0,"error_mode":["x"]}]})"));
  EXPECT_EQ(res.status, 500);
  EXPECT_EQ(res.body, R"("TypeError: unhashable type: 'list'")");
}
