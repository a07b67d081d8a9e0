// Input rows, their expansion and the JSONL files: rollouts/rows.h.
#include "rollouts/rows.h"

#include <boost/json.hpp>

#include "rollouts_test_support.h"

namespace gym::rollouts {
namespace {

namespace json = boost::json;
using testing::config_error_of;
using testing::error_of;
using testing::obj;
using testing::read_text;
using testing::TempDir;

const std::vector<std::string> kAgents{"alpha_agent", "beta_agent"};

// Writes `text` as the input file, reads and expands it; returns each row's compact JSON.
std::vector<std::string> expand_text(const TempDir& dir, const std::string& text,
                                     const CollectionOptions& options,
                                     const std::vector<std::string>& agents = kAgents) {
  auto input = dir.write("input.jsonl", text);
  std::vector<std::string> out;
  for (const auto& row : expand_rows(input, options, agents)) out.push_back(core::render_json(row));
  return out;
}

CollectionOptions with_agent(std::string agent = "alpha_agent") {
  CollectionOptions o;
  o.agent_name = std::move(agent);
  return o;
}

// ---- key_of / agent_of ----

TEST(KeyOf, ReadsTaskAndRolloutIndices) {
  EXPECT_EQ(key_of(obj(R"({"_ng_task_index": 2, "_ng_rollout_index": 5})")), RolloutKey(2, 5));
  EXPECT_EQ(key_of(obj(R"({"_ng_rollout_index": 0, "x": 1, "_ng_task_index": 17})")),
            RolloutKey(17, 0));
  // A Python writer may have produced integral floats.
  EXPECT_EQ(key_of(obj(R"({"_ng_task_index": 3.0, "_ng_rollout_index": 1.0})")), RolloutKey(3, 1));
}

TEST(KeyOf, MissingOrNonIntegerIndicesThrow) {
  EXPECT_EQ(error_of<std::runtime_error>([] { key_of(obj(R"({"_ng_rollout_index": 0})")); }),
            "row has no _ng_task_index");
  EXPECT_EQ(error_of<std::runtime_error>([] { key_of(obj(R"({"_ng_task_index": 0})")); }),
            "row has no _ng_rollout_index");
  EXPECT_EQ(error_of<std::runtime_error>(
                [] { key_of(obj(R"({"_ng_task_index": "1", "_ng_rollout_index": 0})")); }),
            "_ng_task_index is not an integer: \"1\"");
  EXPECT_EQ(error_of<std::runtime_error>(
                [] { key_of(obj(R"({"_ng_task_index": 1, "_ng_rollout_index": 0.5})")); }),
            "_ng_rollout_index is not an integer: 0.5");
}

TEST(KeyOf, IndicesBeyondSixtyFourBitsThrowInsteadOfWrapping) {
  // Found by fuzz/fuzz_input_rows: 1e20 was cast to int64 (undefined behaviour) and
  // 18446744073709551615 wrapped to -1.
  // (An integer literal beyond 64 bits, such as 92233720368547752807, no longer gets this far:
  // the JSON reader refuses it, core/json_text.h.)
  for (const char* index : {"1e20", "-1e19", "9223372036854775808.0", "18446744073709551615"}) {
    const std::string row =
        std::string(R"({"_ng_rollout_index": 0, "_ng_task_index": )") + index + "}";
    const std::string error = error_of<std::runtime_error>([&] { key_of(obj(row)); });
    EXPECT_EQ(error.rfind("_ng_task_index is not an integer: ", 0), 0u) << index << ": " << error;
  }
  EXPECT_EQ(key_of(obj(R"({"_ng_task_index": 9223372036854775807, "_ng_rollout_index": -4.0})")),
            RolloutKey(9223372036854775807, -4));
}

TEST(AgentOf, NameOfTheAgentRefOrEmpty) {
  EXPECT_EQ(agent_of(obj(R"({"agent_ref": {"type": "responses_api_agents", "name": "a1"}})")),
            "a1");
  EXPECT_EQ(agent_of(obj(R"({"agent_ref": {"name": "a2"}})")), "a2");
  EXPECT_EQ(agent_of(obj(R"({})")), "");
  EXPECT_EQ(agent_of(obj(R"({"agent_ref": "a3"})")), "");
  EXPECT_EQ(agent_of(obj(R"({"agent_ref": {"type": "responses_api_agents"}})")), "");
  EXPECT_EQ(agent_of(obj(R"({"agent_ref": {"name": 4}})")), "");
}

// ---- read_jsonl ----

TEST(ReadJsonl, SkipsBlankLinesAndKeepsLineNumbersAndRawBytes) {
  TempDir dir;
  auto path = dir.write("rows.jsonl", "{\"a\":1}\n\n   \n{\"b\": 2}\r\n\t\n{\"c\":3}");
  auto lines = read_jsonl(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].number, 1u);
  EXPECT_EQ(lines[0].raw, "{\"a\":1}\n");
  EXPECT_EQ(json::value(lines[0].row), json::parse(R"({"a": 1})"));
  EXPECT_EQ(lines[1].number, 4u);
  EXPECT_EQ(lines[1].raw, "{\"b\": 2}\r\n");
  EXPECT_EQ(json::value(lines[1].row), json::parse(R"({"b": 2})"));
  // The last line has no newline: its raw bytes have none either.
  EXPECT_EQ(lines[2].number, 6u);
  EXPECT_EQ(lines[2].raw, "{\"c\":3}");
  EXPECT_EQ(json::value(lines[2].row), json::parse(R"({"c": 3})"));
}

TEST(ReadJsonl, EmptyFileHasNoLines) {
  TempDir dir;
  EXPECT_TRUE(read_jsonl(dir.write("empty.jsonl", "")).empty());
  EXPECT_TRUE(read_jsonl(dir.write("blank.jsonl", "\n \n")).empty());
}

TEST(ReadJsonl, LineLongerThanTheLimitIsAnErrorNamingIt) {
  TempDir dir;
  const std::string at_limit = "{\"a\":\"" + std::string(92, 'x') + "\"}";  // 100 bytes
  ASSERT_EQ(at_limit.size(), 100u);
  // Lines spanning the reader's 64 KiB blocks are whole too.
  const std::string long_ok = "{\"b\":\"" + std::string(200'000, 'y') + "\"}";
  auto fine = dir.write("fine.jsonl", at_limit + "\n" + long_ok + "\n" + at_limit);
  EXPECT_CONTAINS(error_of<std::runtime_error>([&] { read_jsonl(fine, std::nullopt, 100'000); }),
                  " line 2: longer than 100000 bytes");
  auto lines = read_jsonl(fine, std::nullopt, 300'000);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1].raw, long_ok + "\n");
  EXPECT_EQ(lines[2].raw, at_limit);

  auto path = dir.write("big.jsonl", at_limit + "\n" + at_limit + "x\n");
  EXPECT_EQ(read_jsonl(path, 1, 100).size(), 1u);  // the long line is past the limit of lines
  auto message = error_of<std::runtime_error>([&] { read_jsonl(path, std::nullopt, 100); });
  EXPECT_CONTAINS(message, path + " line 2: longer than 100 bytes");
  EXPECT_CONTAINS(message, "http_max_request_body_bytes");
}

TEST(ReadJsonl, LimitCountsNonBlankLinesAndStopsReading) {
  TempDir dir;
  // The line after the limit is not JSON: it is never read.
  auto path = dir.write("rows.jsonl", "{\"a\":1}\n\n{\"b\":2}\nnot json\n");
  auto lines = read_jsonl(path, 2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].number, 1u);
  EXPECT_EQ(lines[1].number, 3u);
  EXPECT_EQ(lines[1].raw, "{\"b\":2}\n");
  EXPECT_EQ(read_jsonl(path, 1).size(), 1u);
  EXPECT_THROW(read_jsonl(path, 3), std::runtime_error);
}

TEST(ReadJsonl, InvalidLineNamesFileAndLineNumber) {
  TempDir dir;
  auto bad_json = dir.write("bad.jsonl", "{\"a\":1}\n\n{\"b\":\n");
  auto message = error_of<std::runtime_error>([&] { read_jsonl(bad_json); });
  EXPECT_EQ(message.rfind(bad_json + " line 3: not valid JSON (", 0), 0u) << message;

  auto not_object = dir.write("array.jsonl", "{\"a\":1}\n[1, 2]\n");
  EXPECT_EQ(error_of<std::runtime_error>([&] { read_jsonl(not_object); }),
            not_object + " line 2: not a JSON object");

  auto scalar_last = dir.write("scalar.jsonl", "{}\n{}\n\"text\"");
  EXPECT_EQ(error_of<std::runtime_error>([&] { read_jsonl(scalar_last); }),
            scalar_last + " line 3: not a JSON object");
}

TEST(ReadJsonl, MissingFileIsAnError) {
  TempDir dir;
  auto missing = dir.file("missing.jsonl");
  EXPECT_EQ(error_of<std::runtime_error>([&] { read_jsonl(missing); }),
            "cannot read " + missing + ": no such file or not readable");
}

// ---- expand_rows ----

TEST(ExpandRows, AgentRefFromAgentNameOnlyWhenAbsent) {
  TempDir dir;
  auto rows = expand_text(dir,
                          R"({"responses_create_params":{"input":"q1"},"x":1}
{"responses_create_params":{"input":"q2"},"agent_ref":{"type":"responses_api_agents","name":"beta_agent"}}
)",
                          with_agent("alpha_agent"));
  EXPECT_EQ(
      rows,
      (std::vector<std::string>{
          R"({"responses_create_params":{"input":"q1"},"x":1,"agent_ref":{"name":"alpha_agent"},"_ng_task_index":0,"_ng_rollout_index":0})",
          R"({"responses_create_params":{"input":"q2"},"agent_ref":{"type":"responses_api_agents","name":"beta_agent"},"_ng_task_index":1,"_ng_rollout_index":0})",
      }));
}

TEST(ExpandRows, RowsWithTheirOwnAgentNeedNoAgentName) {
  TempDir dir;
  auto rows =
      expand_text(dir, R"({"responses_create_params":{},"agent_ref":{"name":"beta_agent"}})",
                  CollectionOptions{});
  EXPECT_EQ(
      rows,
      (std::vector<std::string>{
          R"({"responses_create_params":{},"agent_ref":{"name":"beta_agent"},"_ng_task_index":0,"_ng_rollout_index":0})"}));
}

TEST(ExpandRows, CreateParamsOverridesReplaceAndAdd) {
  TempDir dir;
  auto options = with_agent();
  options.create_params_overrides = obj(R"({"temperature": 0.5, "max_output_tokens": 16})");
  auto rows = expand_text(
      dir, R"({"responses_create_params":{"input":"q","temperature":1.0,"top_p":0.9}})", options);
  EXPECT_EQ(
      rows,
      (std::vector<std::string>{
          R"({"responses_create_params":{"input":"q","temperature":0.5,"top_p":0.9,"max_output_tokens":16},"agent_ref":{"name":"alpha_agent"},"_ng_task_index":0,"_ng_rollout_index":0})"}));
}

TEST(ExpandRows, ByteIdenticalLinesShareATaskIndex) {
  TempDir dir;
  // a, b, a, c, b; then `a` with a different spacing and `a` without its newline (the raw
  // bytes, newline included, are the identity).
  const std::string a = R"({"responses_create_params":{"input":"a"}})";
  const std::string b = R"({"responses_create_params":{"input":"b"}})";
  const std::string c = R"({"responses_create_params":{"input":"c"}})";
  const std::string a_spaced = R"({"responses_create_params": {"input":"a"}})";
  auto rows =
      expand_text(dir, a + "\n" + b + "\n" + a + "\n" + c + "\n" + b + "\n" + a_spaced + "\n" + a,
                  with_agent());
  std::vector<RolloutKey> keys;
  for (const auto& r : rows) keys.push_back(key_of(obj(r)));
  EXPECT_EQ(keys,
            (std::vector<RolloutKey>{{0, 0}, {1, 0}, {0, 1}, {2, 0}, {1, 1}, {3, 0}, {4, 0}}));
}

// The lines are remembered by a hash and their place in the file: a repeat far from its first
// occurrence, past the reader's 64 KiB blocks, is still recognised by its bytes.
TEST(ExpandRows, ARepeatedLineFarApartSharesItsTaskIndex) {
  TempDir dir;
  const std::string big =
      R"({"responses_create_params":{"input":")" + std::string(100000, 'x') + R"("}})";
  std::string text = big + "\n";
  for (int i = 0; i < 1000; ++i)
    text += R"({"responses_create_params":{"input":"q)" + std::to_string(i) + "\"}}\n";
  text += big + "\n";
  auto rows = expand_text(dir, text, with_agent());
  ASSERT_EQ(rows.size(), 1002u);
  EXPECT_EQ(key_of(obj(rows.back())), (RolloutKey{0, 1}));
  EXPECT_EQ(key_of(obj(rows[1000])), (RolloutKey{1000, 0}));
}

TEST(ExpandRows, ExplicitTaskIndexIsHonouredAndTakesNoNewIndex) {
  TempDir dir;
  auto rows = expand_text(dir, R"({"responses_create_params":{"input":"a"}}
{"responses_create_params":{"input":"x"},"_ng_task_index":7}
{"responses_create_params":{"input":"b"}}
{"responses_create_params":{"input":"y"},"_ng_task_index":7}
)",
                          with_agent());
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(
      rows[1],
      R"({"responses_create_params":{"input":"x"},"_ng_task_index":7,"agent_ref":{"name":"alpha_agent"},"_ng_rollout_index":0})");
  std::vector<RolloutKey> keys;
  for (const auto& r : rows) keys.push_back(key_of(obj(r)));
  // Rollout indices continue per task index across lines.
  EXPECT_EQ(keys, (std::vector<RolloutKey>{{0, 0}, {7, 0}, {1, 0}, {7, 1}}));
}

TEST(ExpandRows, NumRepeatsEmitsConsecutiveCopies) {
  TempDir dir;
  auto options = with_agent();
  options.num_repeats.fixed = 2;
  const std::string a = R"({"responses_create_params":{"input":"a"}})";
  const std::string b = R"({"responses_create_params":{"input":"b"}})";
  auto rows = expand_text(dir, a + "\n" + b + "\n" + a + "\n", options);
  ASSERT_EQ(rows.size(), 6u);
  std::vector<RolloutKey> keys;
  std::vector<std::string> inputs;
  for (const auto& r : rows) {
    auto row = obj(r);
    keys.push_back(key_of(row));
    inputs.emplace_back(row.at("responses_create_params").at("input").as_string());
  }
  // abc -> aabbcc; the second `a` continues task 0's rollout indices.
  EXPECT_EQ(inputs, (std::vector<std::string>{"a", "a", "b", "b", "a", "a"}));
  EXPECT_EQ(keys, (std::vector<RolloutKey>{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {0, 2}, {0, 3}}));
  EXPECT_EQ(
      rows[1],
      R"({"responses_create_params":{"input":"a"},"agent_ref":{"name":"alpha_agent"},"_ng_task_index":0,"_ng_rollout_index":1})");
}

TEST(ExpandRows, NumRepeatsPerAgentAndDefault) {
  TempDir dir;
  CollectionOptions options;
  options.num_repeats.per_agent = {{"alpha_agent", 2}};
  options.num_repeats.fallback = 3;
  auto rows = expand_text(dir, R"({"responses_create_params":{},"agent_ref":{"name":"beta_agent"}}
{"responses_create_params":{},"agent_ref":{"name":"alpha_agent"}}
)",
                          options);
  std::vector<std::pair<std::string, RolloutKey>> got;
  for (const auto& r : rows) got.emplace_back(agent_of(obj(r)), key_of(obj(r)));
  EXPECT_EQ(got, (std::vector<std::pair<std::string, RolloutKey>>{{"beta_agent", {0, 0}},
                                                                  {"beta_agent", {0, 1}},
                                                                  {"beta_agent", {0, 2}},
                                                                  {"alpha_agent", {1, 0}},
                                                                  {"alpha_agent", {1, 1}}}));
}

TEST(ExpandRows, NumRepeatsPerAgentWithoutDefaultNamesTheMissingAgents) {
  TempDir dir;
  CollectionOptions options;
  options.num_repeats.per_agent = {{"alpha_agent", 2}};
  auto input = dir.write("input.jsonl",
                         R"({"responses_create_params":{},"agent_ref":{"name":"beta_agent"}}
{"responses_create_params":{},"agent_ref":{"name":"alpha_agent"}}
{"responses_create_params":{},"agent_ref":{"name":"gamma_agent"}}
)");
  EXPECT_EQ(config_error_of([&] {
              expand_rows(input, options, {"alpha_agent", "beta_agent", "gamma_agent"});
            }),
            "num_repeats has no entry for agent(s) beta_agent, gamma_agent and no _default; add "
            "++num_repeats._default=<n>");
}

TEST(ExpandRows, AddSeedWritesTheRolloutIndexIntoExtraBody) {
  TempDir dir;
  auto options = with_agent();
  options.num_repeats.fixed = 2;
  options.num_repeats_add_seed = true;
  auto rows = expand_text(dir, R"({"responses_create_params":{"input":"a"}}
{"responses_create_params":{"input":"b","metadata":{"user":"u","extra_body":"{\"chat_template_kwargs\":{\"thinking\":true},\"seed\":99}"}}}
{"responses_create_params":{"input":"a"}}
)",
                          options);
  EXPECT_EQ(
      rows,
      (std::vector<std::string>{
          R"({"responses_create_params":{"input":"a","metadata":{"extra_body":"{\"seed\": 0}"}},"agent_ref":{"name":"alpha_agent"},"_ng_task_index":0,"_ng_rollout_index":0})",
          R"({"responses_create_params":{"input":"a","metadata":{"extra_body":"{\"seed\": 1}"}},"agent_ref":{"name":"alpha_agent"},"_ng_task_index":0,"_ng_rollout_index":1})",
          R"({"responses_create_params":{"input":"b","metadata":{"user":"u","extra_body":"{\"chat_template_kwargs\": {\"thinking\": true}, \"seed\": 0}"}},"agent_ref":{"name":"alpha_agent"},"_ng_task_index":1,"_ng_rollout_index":0})",
          R"({"responses_create_params":{"input":"b","metadata":{"user":"u","extra_body":"{\"chat_template_kwargs\": {\"thinking\": true}, \"seed\": 1}"}},"agent_ref":{"name":"alpha_agent"},"_ng_task_index":1,"_ng_rollout_index":1})",
          R"({"responses_create_params":{"input":"a","metadata":{"extra_body":"{\"seed\": 2}"}},"agent_ref":{"name":"alpha_agent"},"_ng_task_index":0,"_ng_rollout_index":2})",
          R"({"responses_create_params":{"input":"a","metadata":{"extra_body":"{\"seed\": 3}"}},"agent_ref":{"name":"alpha_agent"},"_ng_task_index":0,"_ng_rollout_index":3})",
      }));
}

TEST(ExpandRows, AddSeedRejectsExtraBodyThatIsNotAnObjectString) {
  TempDir dir;
  auto options = with_agent();
  options.num_repeats_add_seed = true;
  auto input = dir.write("input.jsonl", R"({"responses_create_params":{}}

{"responses_create_params":{"metadata":{"extra_body":"[1]"}}}
)");
  EXPECT_EQ(config_error_of([&] { expand_rows(input, options, kAgents); }),
            input +
                " line 3: responses_create_params.metadata.extra_body is not a JSON object "
                "string, so no seed can be added");
}

// num_repeats_add_seed: extra_body is a JSON *string* (upstream json.loads() it and fails on
// anything else); another value must not be silently replaced by {"seed": n}, nor a metadata that
// is no mapping by {"extra_body": ...}.
TEST(ExpandRows, AddSeedRejectsExtraBodyThatIsNotAString) {
  TempDir dir;
  auto options = with_agent();
  options.num_repeats_add_seed = true;
  auto input = dir.write("input.jsonl",
                         R"({"responses_create_params":{"metadata":{"extra_body":{"top_k":5}}}})"
                         "\n");
  EXPECT_EQ(config_error_of([&] { expand_rows(input, options, kAgents); }),
            input +
                " line 1: responses_create_params.metadata.extra_body is not a JSON object "
                "string, so no seed can be added");
}

TEST(ExpandRows, AddSeedRejectsMetadataThatIsNotAnObject) {
  TempDir dir;
  auto options = with_agent();
  options.num_repeats_add_seed = true;
  auto input = dir.write("input.jsonl",
                         "{\"responses_create_params\":{}}\n"
                         R"({"responses_create_params":{"metadata":"m"}})"
                         "\n");
  EXPECT_EQ(config_error_of([&] { expand_rows(input, options, kAgents); }),
            input +
                " line 2: responses_create_params.metadata is not an object, so no seed can be "
                "added");
}

// null is "absent", as everywhere in the config and rows.
TEST(ExpandRows, AddSeedTreatsNullMetadataAndExtraBodyAsAbsent) {
  TempDir dir;
  auto options = with_agent();
  options.num_repeats_add_seed = true;
  auto rows = expand_text(dir,
                          R"({"responses_create_params":{"metadata":null}}
{"responses_create_params":{"metadata":{"extra_body":null}}}
)",
                          options);
  EXPECT_EQ(
      rows,
      (std::vector<std::string>{
          R"({"responses_create_params":{"metadata":{"extra_body":"{\"seed\": 0}"}},"agent_ref":{"name":"alpha_agent"},"_ng_task_index":0,"_ng_rollout_index":0})",
          R"({"responses_create_params":{"metadata":{"extra_body":"{\"seed\": 0}"}},"agent_ref":{"name":"alpha_agent"},"_ng_task_index":1,"_ng_rollout_index":0})"}));
}

TEST(ExpandRows, WithoutAddSeedExtraBodyIsUntouched) {
  TempDir dir;
  auto rows = expand_text(
      dir, R"({"responses_create_params":{"metadata":{"extra_body":"not json"}}})", with_agent());
  EXPECT_EQ(
      rows,
      (std::vector<std::string>{
          R"({"responses_create_params":{"metadata":{"extra_body":"not json"}},"agent_ref":{"name":"alpha_agent"},"_ng_task_index":0,"_ng_rollout_index":0})"}));
}

// ---- expand_rows: the checks of every row ----

TEST(ExpandRows, OneErrorListsEveryOffendingLine) {
  TempDir dir;
  auto input = dir.write("input.jsonl",
                         R"({"responses_create_params":{},"agent_ref":{"name":"alpha_agent"}}
{"agent_ref":{"name":"alpha_agent"}}

{"responses_create_params":{},"agent_ref":{"name":"alpah_agent"}}
{"responses_create_params":{},"agent_ref":{"name":"zzz"}}
{"responses_create_params":{},"agent_ref":{}}
{"responses_create_params":{},"agent_ref":{"name":"beta_agent"},"_ng_task_index":"x"}
{"responses_create_params":"hello","agent_ref":{"name":"beta_agent"}}
{"responses_create_params":{}}
)");
  EXPECT_EQ(
      config_error_of([&] { expand_rows(input, CollectionOptions{}, kAgents); }),
      input +
          ": 8 problem(s) in the input rows; nothing was dispatched:\n"
          "  line 2: no responses_create_params object\n"
          "  line 4: agent 'alpah_agent' is not a responses_api_agents instance (did you "
          "mean 'alpha_agent'?)\n"
          "  line 5: agent 'zzz' is not a responses_api_agents instance\n"
          "  line 6: agent_ref has no name\n"
          "  line 6: no agent: set agent_ref.name in the row or pass --agent NAME\n"
          "  line 7: _ng_task_index is not an integer: \"x\"\n"
          "  line 8: no responses_create_params object\n"
          "  line 9: no agent: set agent_ref.name in the row or pass --agent NAME\n"
          "configured agents: alpha_agent, beta_agent\n"
          "The rows were made for agent(s) alpah_agent, zzz, which this deployment does not have. "
          "Serve the environment they belong to (`gym list` shows which preset defines each "
          "agent, e.g. --resources-server <env>), or, to run them through a configured agent on "
          "purpose, define the name as a copy of it: ++alpah_agent={_copy: alpha_agent} (rewards "
          "are then its environment's)");
}

TEST(ExpandRows, AWrongFileOfManyLinesListsTheFirstHundredProblemsAndCountsTheRest) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 250; ++i) text += "{\"agent_ref\":{\"name\":\"alpha_agent\"}}\n";
  auto input = dir.write("input.jsonl", text);
  const auto message = config_error_of([&] { expand_rows(input, CollectionOptions{}, kAgents); });
  EXPECT_CONTAINS(message,
                  ": 250 problem(s) in the input rows; nothing was dispatched:\n"
                  "  line 1: no responses_create_params object\n");
  EXPECT_CONTAINS(message,
                  "  line 100: no responses_create_params object\n"
                  "  ... and 150 more\n");
  EXPECT_NOT_CONTAINS(message, "line 101:");
}

TEST(ExpandRows, AgentNameThatIsNotAnAgentIsReportedWithoutAgents) {
  TempDir dir;
  auto input = dir.write("input.jsonl", "{\"responses_create_params\":{}}\n");
  EXPECT_EQ(
      config_error_of([&] { expand_rows(input, with_agent("mcqa_agent"), {}); }),
      input +
          ": 1 problem(s) in the input rows; nothing was dispatched:\n"
          "  line 1: agent 'mcqa_agent' is not a responses_api_agents instance\n"
          "configured agents: (none)\n"
          "The rows were made for agent(s) mcqa_agent, which this deployment does not have. Serve "
          "the environment they belong to (`gym list` shows which preset defines each agent, e.g. "
          "--resources-server <env>)");
}

TEST(ExpandRows, NoLinesExpandToNoRows) {
  TempDir dir;
  EXPECT_TRUE(expand_text(dir, "\n\n", with_agent()).empty());
}

// ---- write_jsonl ----

TEST(WriteJsonl, CompactRowsOneALineReplacingTheFile) {
  TempDir dir;
  auto path = dir.write("out.jsonl", "old content that must go\n");
  write_jsonl(path, {obj(R"({"reward": 1.0, "n": null, "s": "é", "list": [1, 2.5]})"),
                     obj(R"({"b": {"c": true}})")});
  EXPECT_EQ(read_text(path),
            "{\"reward\":1.0,\"n\":null,\"s\":\"é\",\"list\":[1,2.5]}\n{\"b\":{\"c\":true}}\n");
  write_jsonl(path, {});
  EXPECT_EQ(read_text(path), "");
}

TEST(WriteJsonl, RoundTripsThroughReadJsonl) {
  TempDir dir;
  auto path = dir.file("rows.jsonl");
  std::vector<json::object> rows{obj(R"({"a": 1, "_ng_task_index": 0})"), obj(R"({"a": 2})")};
  write_jsonl(path, rows);
  auto lines = read_jsonl(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].row, rows[0]);
  EXPECT_EQ(lines[1].row, rows[1]);
  EXPECT_EQ(lines[1].number, 2u);
  EXPECT_EQ(lines[1].raw, "{\"a\":2}\n");
}

TEST(WriteJsonl, UnwritablePathIsAnError) {
  TempDir dir;
  auto path = dir.file("no/such/dir/out.jsonl");
  EXPECT_EQ(error_of<std::runtime_error>([&] { write_jsonl(path, {obj("{}")}); }),
            "cannot write " + path);
}

}  // namespace
}  // namespace gym::rollouts
