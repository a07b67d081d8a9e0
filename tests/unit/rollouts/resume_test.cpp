// --resume (docs/design/failures-and-retries.md#resume-and-attempts): rollouts/resume.h
// plan_resume.
#include "rollouts/resume.h"

#include "rollouts/plan.h"

#include <boost/json.hpp>

#include "rollouts/rows.h"
#include "rollouts_test_support.h"

namespace gym::rollouts {
namespace {

namespace json = boost::json;
using testing::error_of;
using testing::obj;
using testing::read_text;
using testing::TempDir;

// The materialized rows of 3 tasks x 2 rollouts for agent `a`.
std::vector<json::object> materialized_rows() {
  std::vector<json::object> rows;
  for (int task = 0; task < 3; ++task)
    for (int rollout = 0; rollout < 2; ++rollout)
      rows.push_back(json::object{
          {"responses_create_params", json::object{{"input", "q" + std::to_string(task)}}},
          {"agent_ref", json::object{{"name", "a"}}},
          {"_ng_task_index", task},
          {"_ng_rollout_index", rollout}});
  return rows;
}

// A successful result line as the collector writes it.
std::string result_line(int task, int rollout, double reward = 1.0) {
  json::object row{{"responses_create_params", json::object{{"input", "q" + std::to_string(task)}}},
                   {"response", json::object{{"id", "resp"},
                                             {"output", json::array{}},
                                             {"usage", json::object{{"input_tokens", 3}}}}},
                   {"reward", reward},
                   {"_ng_task_index", task},
                   {"_ng_rollout_index", rollout},
                   {"agent_ref", json::object{{"name", "a"}}}};
  return core::render_json(row) + "\n";
}

// A failure line of the sidecar; `fault`: the model endpoint's, as the collector marks it.
std::string failure_line(int task, int rollout, bool terminal = false,
                         const char* fault = nullptr) {
  json::object row{{"_ng_task_index", task},
                   {"_ng_rollout_index", rollout},
                   {"agent_ref", json::object{{"name", "a"}}},
                   {"_ng_failure_class", "agent_run_error"},
                   {"_ng_failure_error", "HTTP 500"}};
  if (terminal) row["_ng_failure_terminal"] = true;
  if (fault) {
    row["_ng_failure_endpoint"] = "http://127.0.0.1:9/v1/chat/completions";
    row["_ng_failure_endpoint_fault"] = fault;
  }
  return core::render_json(row) + "\n";
}

std::vector<RolloutKey> keys_of(const std::vector<json::object>& rows) {
  std::vector<RolloutKey> keys;
  for (const auto& r : rows) keys.push_back(key_of(r));
  return keys;
}

class PlanResume : public ::testing::Test {
 protected:
  PlanResume() : paths_(OutputPaths::for_output(dir_.file("out.jsonl"))) {
    write_jsonl(paths_.materialized, materialized_rows());
  }

  // plan_resume with its stdout captured into `printed_`.
  ResumePlan plan(int max_attempts = 3,
                  const std::vector<json::object>& expected = materialized_rows()) {
    ::testing::internal::CaptureStdout();
    auto p = plan_resume(paths_, expected, max_attempts);
    printed_ = ::testing::internal::GetCapturedStdout();
    return p;
  }

  // The rows `p` dispatches from the materialized file, read back as the collector reads them.
  std::vector<json::object> dispatched(const ResumePlan& p) {
    PlannedRows reader(paths_.materialized, p.to_run);
    std::vector<json::object> out;
    while (auto row = reader.next()) out.push_back(std::move(*row));
    return out;
  }

  // The message of plan_resume's refusal (its stdout is dropped).
  std::string refusal() {
    ::testing::internal::CaptureStdout();
    auto message =
        error_of<std::runtime_error>([&] { plan_resume(paths_, materialized_rows(), 3); });
    ::testing::internal::GetCapturedStdout();
    return message;
  }

  TempDir dir_;
  OutputPaths paths_;
  std::string printed_;
};

TEST_F(PlanResume, NothingDoneRunsEveryRowAgain) {
  dir_.write("out.jsonl", "");
  auto p = plan();
  EXPECT_EQ(dispatched(p), materialized_rows());
  EXPECT_EQ(p.done, 0u);
  EXPECT_EQ(p.materialized, 6u);
  EXPECT_EQ(p.terminal, 0u);
  EXPECT_EQ(p.maxed_out, 0u);
  EXPECT_EQ(p.failure_attempts, 0u);
  EXPECT_EQ(p.failed_keys, 0u);
}

TEST_F(PlanResume, CountsDoneFailedTerminalAndMaxedOut) {
  dir_.write("out.jsonl", result_line(0, 0) + result_line(0, 1) + "\n" + result_line(1, 0, 0.0));
  // (1,1) failed once; (2,0) failed once, terminally; (2,1) failed 3 times (the maximum); a
  // row without indices is not an attempt of any rollout.
  dir_.write("out_failures.jsonl", failure_line(2, 1) + failure_line(1, 1) +
                                       failure_line(2, 0, true) + failure_line(2, 1) +
                                       "{\"_ng_failure_class\":\"x\"}\n" + failure_line(2, 1));
  auto p = plan(3);
  EXPECT_EQ(p.materialized, 6u);
  EXPECT_EQ(p.done, 3u);
  EXPECT_EQ(p.failure_attempts, 5u);
  EXPECT_EQ(p.failed_keys, 3u);
  EXPECT_EQ(p.terminal, 1u);
  EXPECT_EQ(p.maxed_out, 1u);
  ASSERT_EQ(dispatched(p).size(), 1u);
  // The one row left carries its prior attempt count.
  auto expected = materialized_rows()[3];
  expected["_ng_attempt_index"] = 1;
  EXPECT_EQ(core::render_json(dispatched(p)[0]), core::render_json(expected));
  EXPECT_EQ(printed_,
            "Resumed from cache. Found:\n"
            "- 6 rollouts in the materialized inputs\n"
            "- 3 rollouts already done (in main jsonl)\n"
            "- 5 prior failed attempts (of 3 rollouts) in sidecar\n"
            "- 1 sidecar-terminal -> not retried\n"
            "- 1 hit max_attempts=3 -> not retried\n"
            "- 1 rollouts that still need to be run\n");
}

TEST_F(PlanResume, FailuresOfTheModelEndpointDoNotUseUpAttempts) {
  dir_.write("out.jsonl", "");
  // (0,0): three outages of the endpoint (refused, 5xx, declared unavailable) and one 429 storm;
  // (0,1): two outages and one failure of its own; (1,0): a 401 is the request's, it counts.
  dir_.write(
      "out_failures.jsonl",
      failure_line(0, 0, false, "unreachable") + failure_line(0, 0, false, "server_error") +
          failure_line(0, 0, false, "unavailable") + failure_line(0, 0, false, "rate_limited") +
          failure_line(0, 1, false, "unreachable") + failure_line(0, 1, false, "unreachable") +
          failure_line(0, 1) + failure_line(1, 0, false, "rejected"));
  auto p = plan(1);
  EXPECT_EQ(p.endpoint_outages, 6u);
  EXPECT_EQ(p.failure_attempts, 2u);
  EXPECT_EQ(p.maxed_out, 2u);  // (0,1) and (1,0) had their one attempt
  EXPECT_EQ(keys_of(dispatched(p)), (std::vector<RolloutKey>{{0, 0}, {1, 1}, {2, 0}, {2, 1}}));
  EXPECT_FALSE(dispatched(p)[0].contains("_ng_attempt_index"));
  EXPECT_CONTAINS(printed_,
                  "- 6 failures caused by the model endpoint (not counted as attempts)\n");
}

TEST_F(PlanResume, MoreRepeatsOfTheSameTasksAreAdded) {
  dir_.write("out.jsonl", result_line(0, 0));
  // The same 3 tasks with 3 rollouts each: (t, 2) are new.
  auto expected = materialized_rows();
  std::vector<json::object> three;
  for (int task = 0; task < 3; ++task) {
    for (int rollout = 0; rollout < 3; ++rollout) {
      auto row = expected[static_cast<std::size_t>(task * 2)];
      row["_ng_rollout_index"] = rollout;
      three.push_back(row);
    }
  }
  auto p = plan(3, three);
  // Appended to the materialized file when the run starts (plan_test), and run then.
  std::vector<RolloutKey> added;
  for (const auto& a : p.added) {
    added.push_back(a.key);
    EXPECT_TRUE(a.runs);
    EXPECT_EQ(a.attempts, 0);
  }
  EXPECT_EQ(added, (std::vector<RolloutKey>{{0, 2}, {1, 2}, {2, 2}}));
  EXPECT_EQ(keys_of(dispatched(p)),
            (std::vector<RolloutKey>{{0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1}}));
  EXPECT_EQ(p.per_agent, (std::map<std::string, std::size_t>{{"a", 8}}));
  EXPECT_CONTAINS(printed_, "- 3 rollouts added: the input now expands to more\n");
  EXPECT_NOT_CONTAINS(printed_, "WARNING");

  // Fewer repeats drop nothing: a warning says how to start afresh.
  std::vector<json::object> one{expected[0], expected[2], expected[4]};
  auto fewer = plan(3, one);
  EXPECT_TRUE(fewer.added.empty());
  EXPECT_EQ(dispatched(fewer).size(), 5u);
  EXPECT_CONTAINS(printed_, "never drops or changes one");
}

TEST_F(PlanResume, MaxAttemptsDecidesWhatIsMaxedOut) {
  dir_.write("out.jsonl", "");
  dir_.write("out_failures.jsonl", failure_line(0, 1) + failure_line(0, 1) + failure_line(2, 0));
  auto p = plan(2);
  EXPECT_EQ(p.maxed_out, 1u);
  EXPECT_EQ(keys_of(dispatched(p)),
            (std::vector<RolloutKey>{{0, 0}, {1, 0}, {1, 1}, {2, 0}, {2, 1}}));
  EXPECT_EQ(dispatched(p)[3].at("_ng_attempt_index"), 1);
  EXPECT_FALSE(dispatched(p)[0].contains("_ng_attempt_index"));

  auto more = plan(3);
  EXPECT_EQ(more.maxed_out, 0u);
  EXPECT_EQ(keys_of(dispatched(more)),
            (std::vector<RolloutKey>{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1}}));
  EXPECT_EQ(dispatched(more)[1].at("_ng_attempt_index"), 2);
  EXPECT_EQ(dispatched(more)[4].at("_ng_attempt_index"), 1);
}

// Done rows are counted, not kept: the aggregate metrics read them from the file after the run.
TEST_F(PlanResume, DoneRowsAreCountedAndNotRunAgain) {
  dir_.write("out.jsonl", result_line(1, 1, 0.5) + result_line(1, 1, 0.5));
  auto p = plan();
  EXPECT_EQ(p.done, 2u);  // every row of the file, as the summary says
  EXPECT_EQ(keys_of(dispatched(p)),
            (std::vector<RolloutKey>{{0, 0}, {0, 1}, {1, 0}, {2, 0}, {2, 1}}));
}

// An older gym copied an endpoint's Latin-1 error page byte for byte into a failure row (and a
// row of the rollouts file could hold such bytes too): --resume reads the files it wrote itself.
TEST_F(PlanResume, LinesWithBytesThatAreNotUtf8AreReadNotRefused) {
  std::string result = result_line(0, 0);
  result.insert(result.find("resp"), "caf\xE9 ");
  dir_.write("out.jsonl", result);
  std::string failure = failure_line(1, 0);
  failure.insert(failure.find("HTTP 500"), "<p>Acc\xE8s refus\xE9</p> ");
  dir_.write("out_failures.jsonl", failure);
  auto p = plan();
  EXPECT_EQ(p.done, 1u);
  EXPECT_EQ(p.failure_attempts, 1u);
  ASSERT_EQ(keys_of(dispatched(p)),
            (std::vector<RolloutKey>{{0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1}}));
  EXPECT_EQ(dispatched(p)[1].at("_ng_attempt_index"), 1);
}

// The materialized file is read once for the keys and again only for the rows that run: those
// come back whole, each from its own line.
TEST_F(PlanResume, TheRowsThatRunAreReadBackWholeFromTheMaterializedFile) {
  auto rows = materialized_rows();
  rows[4]["responses_create_params"].as_object()["input"] = std::string(200000, 'x');
  write_jsonl(paths_.materialized, rows);
  dir_.write("out.jsonl", result_line(0, 0) + result_line(1, 1));
  auto p = plan(3, rows);
  EXPECT_NOT_CONTAINS(printed_, "WARNING");
  EXPECT_EQ(dispatched(p), (std::vector<json::object>{rows[1], rows[2], rows[4], rows[5]}));
}

TEST_F(PlanResume, ALastLineCutShortIsRemovedAndItsRolloutRunsAgain) {
  const std::string complete = result_line(0, 0) + result_line(0, 1);
  const std::string partial = R"({"responses_create_params":{"input":"q1"},"response":{"id)";
  dir_.write("out.jsonl", complete + partial);
  auto p = plan();
  EXPECT_EQ(read_text(paths_.rollouts), complete);
  EXPECT_EQ(keys_of(dispatched(p)), (std::vector<RolloutKey>{{1, 0}, {1, 1}, {2, 0}, {2, 1}}));
  EXPECT_EQ(p.done, 2u);
  EXPECT_EQ(printed_.rfind("WARNING: " + paths_.rollouts.string() +
                               " ends with an incomplete line (" + std::to_string(partial.size()) +
                               " bytes); removing it, its rollout runs again\n",
                           0),
            0u)
      << printed_;
}

// The tail is searched backwards block by block: a partial line longer than a block is cut at
// the newline before it.
TEST_F(PlanResume, APartialLineLongerThanAReadBlockIsCutAtTheLastNewline) {
  const std::string complete = result_line(0, 0);
  const std::string partial = R"({"responses_create_params":{"input":")" + std::string(300000, 'y');
  dir_.write("out.jsonl", complete + partial);
  auto p = plan();
  EXPECT_EQ(read_text(paths_.rollouts), complete);
  EXPECT_EQ(p.done, 1u);
  EXPECT_CONTAINS(printed_,
                  "ends with an incomplete line (" + std::to_string(partial.size()) + " bytes)");
}

TEST_F(PlanResume, APartialOnlyLineLeavesAnEmptyFile) {
  dir_.write("out.jsonl", R"({"_ng_task_index":0,"_ng_rollout)");
  auto p = plan();
  EXPECT_EQ(read_text(paths_.rollouts), "");
  EXPECT_EQ(std::filesystem::file_size(paths_.rollouts), 0u);
  EXPECT_EQ(dispatched(p).size(), 6u);
}

TEST_F(PlanResume, ALastFailureLineCutShortIsRemovedToo) {
  dir_.write("out.jsonl", "");
  const std::string complete = failure_line(0, 0);
  dir_.write("out_failures.jsonl", complete + R"({"_ng_task_index":0,"_ng_rollout_index":0,"ag)");
  auto p = plan();
  EXPECT_EQ(read_text(paths_.failures), complete);
  EXPECT_EQ(p.failure_attempts, 1u);
  EXPECT_EQ(dispatched(p)[0].at("_ng_attempt_index"), 1);
}

TEST_F(PlanResume, TheMaterializedFileWinsOverTheRecomputedExpansion) {
  dir_.write("out.jsonl", result_line(0, 0));
  // The input changed since: it now expands to one different row.
  std::vector<json::object> expected{obj(
      R"({"responses_create_params":{"input":"new"},"agent_ref":{"name":"a"},"_ng_task_index":0,"_ng_rollout_index":0})")};
  auto p = plan(3, expected);
  EXPECT_EQ(p.materialized, 6u);
  EXPECT_EQ(keys_of(dispatched(p)),
            (std::vector<RolloutKey>{{0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1}}));
  EXPECT_EQ(dispatched(p)[0].at("responses_create_params").at("input"), "q0");
  EXPECT_EQ(
      printed_.rfind("WARNING: the input expands differently from " + paths_.materialized.string() +
                         " (6 rollouts vs 1); resuming the materialized rollouts.",
                     0),
      0u)
      << printed_;
}

TEST_F(PlanResume, NoWarningWhenTheExpansionMatches) {
  dir_.write("out.jsonl", "");
  plan();
  EXPECT_NOT_CONTAINS(printed_, "WARNING");
  EXPECT_EQ(printed_.rfind("Resumed from cache. Found:\n", 0), 0u) << printed_;
}

TEST_F(PlanResume, MissingMaterializedFileIsAnError) {
  dir_.write("out.jsonl", "");
  std::filesystem::remove(paths_.materialized);
  ::testing::internal::CaptureStdout();
  auto message =
      error_of<std::runtime_error>([&] { plan_resume(paths_, std::vector<json::object>{}, 3); });
  ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(message,
            "cannot read " + paths_.materialized.string() + ": no such file or not readable");
}

// issue 13.13: refusing a corrupt file says which line and how to repair it.
TEST_F(PlanResume, ACorruptRolloutLineNamesTheLineAndHowToRepairIt) {
  const std::string out = paths_.rollouts.string();
  dir_.write("out.jsonl", result_line(0, 0) + "{not json\n" + result_line(1, 0));
  auto message = refusal();
  EXPECT_CONTAINS(message, "cannot resume: " + out + " line 2: not valid JSON");
  EXPECT_CONTAINS(message, "`sed -i '2d' " + out + "`");
  EXPECT_CONTAINS(message, "without --resume to start afresh");
}

TEST_F(PlanResume, ARolloutWithoutItsKeyIsRefusedWithTheRepair) {
  const std::string out = paths_.rollouts.string();
  dir_.write("out.jsonl", result_line(0, 0) + "{\"reward\": 1}\n");
  auto message = refusal();
  EXPECT_CONTAINS(message, out + " line 2: row has no _ng_task_index");
  EXPECT_CONTAINS(message, "sed -i '2d'");
}

TEST_F(PlanResume, ACorruptFailureLineIsRefusedWithTheRepair) {
  dir_.write("out.jsonl", "");
  dir_.write("out_failures.jsonl", failure_line(0, 0) + "[1]\n" + failure_line(1, 0));
  auto message = refusal();
  EXPECT_CONTAINS(message, paths_.failures.string() + " line 2: not a JSON object");
  EXPECT_CONTAINS(message, "sed -i '2d' " + paths_.failures.string());
}

}  // namespace
}  // namespace gym::rollouts
