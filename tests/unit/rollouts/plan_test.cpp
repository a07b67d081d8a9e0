// The rows a collection dispatches (fresh or resumed): rollouts/plan.h plan_rows.
#include "rollouts/plan.h"

#include <boost/json.hpp>

#include <map>

#include "rollouts/rows.h"
#include "rollouts_test_support.h"

namespace gym::rollouts {
namespace {

namespace json = boost::json;
using testing::config_error_of;
using testing::error_of;
using testing::obj;
using testing::read_text;
using testing::ScopedEnv;
using testing::TempDir;

namespace fs = std::filesystem;

const std::vector<std::string> kAgents{"a"};

const std::string kInput =
    "{\"responses_create_params\":{\"input\":\"q0\"}}\n"
    "{\"responses_create_params\":{\"input\":\"q1\"}}\n";

// What kInput expands to with agent `a` and two repeats, one compact row a line.
const std::string kMaterialized =
    R"({"responses_create_params":{"input":"q0"},"agent_ref":{"name":"a"},"_ng_task_index":0,"_ng_rollout_index":0}
{"responses_create_params":{"input":"q0"},"agent_ref":{"name":"a"},"_ng_task_index":0,"_ng_rollout_index":1}
{"responses_create_params":{"input":"q1"},"agent_ref":{"name":"a"},"_ng_task_index":1,"_ng_rollout_index":0}
{"responses_create_params":{"input":"q1"},"agent_ref":{"name":"a"},"_ng_task_index":1,"_ng_rollout_index":1}
)";

std::vector<RolloutKey> keys_of(const std::vector<json::object>& rows) {
  std::vector<RolloutKey> keys;
  for (const auto& r : rows) keys.push_back(key_of(r));
  return keys;
}

class PlanRows : public ::testing::Test {
 protected:
  PlanRows() : paths_(OutputPaths::for_output(dir_.file("out.jsonl"))) {
    input_ = dir_.write("input.jsonl", kInput);
    options_.output = paths_.rollouts;
    options_.input = input_;
    options_.agent_name = "a";
    options_.num_repeats.fixed = 2;
  }

  // plan_rows, then (with `start`) prepare_output_files, with stdout captured into `printed_`.
  Plan plan(const std::vector<std::string>& agents = kAgents, bool start = true) {
    ::testing::internal::CaptureStdout();
    try {
      auto p = plan_rows(options_, paths_, input_, agents);
      if (start) prepare_output_files(p, options_, paths_);
      printed_ = ::testing::internal::GetCapturedStdout();
      return p;
    } catch (...) {
      printed_ = ::testing::internal::GetCapturedStdout();
      throw;
    }
  }

  // The rows `p` dispatches, read back from the materialized file as the collector reads them.
  std::vector<json::object> dispatched(const Plan& p) {
    PlannedRows reader(paths_.materialized, p.rollouts);
    std::vector<json::object> out;
    while (auto row = reader.next()) out.push_back(std::move(*row));
    EXPECT_EQ(out.size(), p.to_dispatch());
    return out;
  }

  ScopedEnv attempts_{"NEMO_GYM_MAX_ROLLOUT_ATTEMPTS", std::nullopt};
  TempDir dir_;
  OutputPaths paths_;
  fs::path input_;
  CollectionOptions options_;
  std::string printed_;
};

TEST_F(PlanRows, FreshRunWritesTheMaterializedFileAndRemovesOldResults) {
  dir_.write("out.jsonl", "{\"old\":1}\n");
  dir_.write("out_failures.jsonl", "{\"old\":2}\n");
  dir_.write("out_materialized_inputs.jsonl", "{\"old\":3}\n");
  auto p = plan();
  EXPECT_EQ(read_text(paths_.materialized), kMaterialized);
  EXPECT_FALSE(fs::exists(paths_.rollouts));
  EXPECT_FALSE(fs::exists(paths_.failures));
  EXPECT_EQ(dispatched(p), testing::rows_of(kMaterialized));
  EXPECT_EQ(p.done, 0u);
  EXPECT_EQ(printed_,
            "Using `a` for rows that do not already have an agent ref\n"
            "Clearing output fpath since `resume_from_cache=False`!\n");
}

TEST_F(PlanRows, PlanningTouchesNoFileUntilTheRunStarts) {
  // A run that fails to start (a busy port, a server exiting) must leave the earlier results.
  const std::map<fs::path, std::string> earlier{{paths_.rollouts, "{\"old\":1}\n"},
                                                {paths_.failures, "{\"old\":2}\n"},
                                                {paths_.materialized, "{\"old\":3}\n"},
                                                {paths_.aggregate_metrics, "[]\n"}};
  for (const auto& [path, text] : earlier) dir_.write(path.filename().string(), text);
  auto p = plan(kAgents, /*start=*/false);
  EXPECT_TRUE(p.fresh);
  for (const auto& [path, text] : earlier) EXPECT_EQ(read_text(path), text) << path;
  EXPECT_NOT_CONTAINS(printed_, "Clearing output fpath");

  ::testing::internal::CaptureStdout();
  prepare_output_files(p, options_, paths_);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "Clearing output fpath since `resume_from_cache=False`!\n");
  EXPECT_EQ(read_text(paths_.materialized), kMaterialized);
  EXPECT_FALSE(fs::exists(paths_.rollouts));
  EXPECT_FALSE(fs::exists(paths_.failures));
  EXPECT_FALSE(fs::exists(paths_.aggregate_metrics));  // it described the removed rollouts
}

// A plan holds no row: it counts them, and once the file is written names its lines; the rows
// are read back one at a time as they are dispatched.
TEST_F(PlanRows, AFreshPlanCountsTheRowsAndNamesTheLinesItWrote) {
  auto p = plan(kAgents, /*start=*/false);
  EXPECT_TRUE(p.rollouts.empty());
  EXPECT_EQ(p.per_agent, (std::map<std::string, std::size_t>{{"a", 4}}));
  EXPECT_EQ(p.to_dispatch(), 4u);
  ::testing::internal::CaptureStdout();
  prepare_output_files(p, options_, paths_);
  ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(p.rollouts.size(), 4u);
  std::uint64_t offset = 0;
  for (const auto& r : p.rollouts) {
    EXPECT_EQ(r.offset, offset);
    EXPECT_EQ(r.attempts, 0);
    offset = kMaterialized.find('\n', offset) + 1;
  }
  EXPECT_EQ(dispatched(p), testing::rows_of(kMaterialized));
}

TEST_F(PlanRows, AnInputChangedBeforeTheRunStartsIsRefused) {
  dir_.write("out.jsonl", "{\"old\":1}\n");
  auto p = plan(kAgents, /*start=*/false);
  dir_.write("input.jsonl", kInput + "{\"responses_create_params\":{\"input\":\"q2\"}}\n");
  ::testing::internal::CaptureStdout();
  const auto message =
      error_of<std::runtime_error>([&] { prepare_output_files(p, options_, paths_); });
  ::testing::internal::GetCapturedStdout();
  EXPECT_CONTAINS(message, "the input " + input_.string() + " changed while the run started");
  // Nothing of the earlier run is touched: no materialized file, and no partial one left.
  EXPECT_FALSE(fs::exists(paths_.materialized));
  EXPECT_EQ(read_text(paths_.rollouts), "{\"old\":1}\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path()), fs::directory_iterator{}), 2);
}

TEST_F(PlanRows, ResumeWithMoreRepeatsAppendsTheAddedRolloutsAndRunsThem) {
  plan();
  const std::string done =
      R"({"responses_create_params":{"input":"q0"},"reward":1.0,"_ng_task_index":0,"_ng_rollout_index":0,"agent_ref":{"name":"a"}})"
      "\n";
  dir_.write("out.jsonl", done);
  options_.resume = true;
  options_.num_repeats.fixed = 3;
  auto p = plan(kAgents, /*start=*/false);
  EXPECT_EQ(p.to_dispatch(), 5u);  // 3 left of the 4, and 2 added
  ::testing::internal::CaptureStdout();
  prepare_output_files(p, options_, paths_);
  ::testing::internal::GetCapturedStdout();
  const auto materialized = testing::rows_of(read_text(paths_.materialized));
  ASSERT_EQ(materialized.size(), 6u);
  EXPECT_EQ(read_text(paths_.materialized).substr(0, kMaterialized.size()), kMaterialized);
  EXPECT_EQ(keys_of({materialized[4], materialized[5]}), (std::vector<RolloutKey>{{0, 2}, {1, 2}}));
  EXPECT_EQ(keys_of(dispatched(p)),
            (std::vector<RolloutKey>{{0, 1}, {1, 0}, {1, 1}, {0, 2}, {1, 2}}));
}

TEST_F(PlanRows, EmptyInputIsAConfigErrorAndTouchesNoFile) {
  dir_.write("out.jsonl", "{\"old\":1}\n");
  for (const std::string empty : {"", "\n  \n\t\n"}) {
    dir_.write("input.jsonl", empty);
    auto message = config_error_of([&] { plan(); });
    EXPECT_CONTAINS(message, "input: " + input_.string() + " has no rows");
    EXPECT_CONTAINS(message, "--input");
    EXPECT_EQ(read_text(paths_.rollouts), "{\"old\":1}\n");
    EXPECT_FALSE(fs::exists(paths_.materialized));
  }
}

TEST_F(PlanRows, ResumedPlanLeavesTheFilesToBeAppended) {
  plan();
  dir_.write("out.jsonl", "");
  dir_.write("out_aggregate_metrics.json", "[]\n");
  options_.resume = true;
  auto p = plan();
  EXPECT_FALSE(p.fresh);
  EXPECT_EQ(read_text(paths_.materialized), kMaterialized);
  EXPECT_EQ(read_text(paths_.aggregate_metrics), "[]\n");
}

TEST_F(PlanRows, FreshRunPrintsLimitAndOverrides) {
  options_.limit = 1;
  options_.create_params_overrides = obj(R"({"temperature":0.25})");
  auto p = plan();
  EXPECT_EQ(keys_of(dispatched(p)), (std::vector<RolloutKey>{{0, 0}, {0, 1}}));
  EXPECT_EQ(dispatched(p)[0].at("responses_create_params").at("temperature"), 0.25);
  EXPECT_EQ(testing::rows_of(read_text(paths_.materialized)), dispatched(p));
  EXPECT_EQ(printed_,
            "Limiting the number of rows to 1\n"
            "Using `a` for rows that do not already have an agent ref\n"
            "Overriding responses_create_params fields with {\"temperature\":0.25}\n"
            "Clearing output fpath since `resume_from_cache=False`!\n");
}

TEST_F(PlanRows, ResumeWithBothFilesPlansWhatIsLeft) {
  plan();  // the first run's materialized file
  const std::string done =
      R"({"responses_create_params":{"input":"q0"},"response":{"usage":{"output_tokens":2},"output":[]},"reward":1.0,"_ng_task_index":0,"_ng_rollout_index":1,"agent_ref":{"name":"a"}})"
      "\n";
  const std::string failed =
      R"({"_ng_task_index":1,"_ng_rollout_index":0,"agent_ref":{"name":"a"},"_ng_failure_class":"agent_run_error"})"
      "\n";
  dir_.write("out.jsonl", done);
  dir_.write("out_failures.jsonl", failed);
  options_.resume = true;
  auto p = plan();
  EXPECT_EQ(keys_of(dispatched(p)), (std::vector<RolloutKey>{{0, 0}, {1, 0}, {1, 1}}));
  EXPECT_EQ(dispatched(p)[1].at("_ng_attempt_index"), 1);
  EXPECT_EQ(p.done, 1u);
  // Nothing is rewritten or removed: output and sidecar are appended to.
  EXPECT_EQ(read_text(paths_.materialized), kMaterialized);
  EXPECT_EQ(read_text(paths_.rollouts), done);
  EXPECT_EQ(read_text(paths_.failures), failed);
  EXPECT_CONTAINS(printed_, "- 1 rollouts already done (in main jsonl)\n");
  EXPECT_NOT_CONTAINS(printed_, "Clearing output fpath");
}

TEST_F(PlanRows, ResumeUsesMaxRolloutAttemptsFromTheEnvironment) {
  plan();
  dir_.write("out.jsonl", "");
  const std::string failed =
      R"({"_ng_task_index":1,"_ng_rollout_index":0,"agent_ref":{"name":"a"},"_ng_failure_class":"agent_run_error"})"
      "\n";
  dir_.write("out_failures.jsonl", failed);
  options_.resume = true;
  {
    ScopedEnv one("NEMO_GYM_MAX_ROLLOUT_ATTEMPTS", "1");
    EXPECT_EQ(keys_of(dispatched(plan())), (std::vector<RolloutKey>{{0, 0}, {0, 1}, {1, 1}}));
    EXPECT_CONTAINS(printed_, "- 1 hit max_attempts=1 -> not retried\n");
  }
  EXPECT_EQ(keys_of(dispatched(plan())), (std::vector<RolloutKey>{{0, 0}, {0, 1}, {1, 0}, {1, 1}}));
  EXPECT_CONTAINS(printed_, "- 0 hit max_attempts=3 -> not retried\n");
}

TEST_F(PlanRows, ResumeFollowsTheMaterializedFileNotTheChangedInput) {
  plan();
  dir_.write("out.jsonl", "");
  dir_.write("input.jsonl", kInput + "{\"responses_create_params\":{\"input\":\"q2\"}}\n");
  options_.resume = true;
  auto p = plan();
  EXPECT_EQ(dispatched(p), testing::rows_of(kMaterialized));
  EXPECT_EQ(read_text(paths_.materialized), kMaterialized);
  EXPECT_CONTAINS(printed_, "WARNING: the input expands differently from " +
                                paths_.materialized.string() + " (4 rollouts vs 6)");
}

TEST_F(PlanRows, ResumeWithoutTheOutputFileIsAFreshRun) {
  dir_.write("out_materialized_inputs.jsonl", "{\"stale\":true}\n");
  dir_.write("out_failures.jsonl", "{\"old\":2}\n");
  options_.resume = true;
  auto p = plan();
  EXPECT_EQ(dispatched(p), testing::rows_of(kMaterialized));
  EXPECT_EQ(read_text(paths_.materialized), kMaterialized);
  EXPECT_FALSE(fs::exists(paths_.failures));
  EXPECT_CONTAINS(printed_, "Skipping resume_from_cache because " + paths_.rollouts.string() +
                                " doesn't exist!\n");
  EXPECT_NOT_CONTAINS(printed_,
                      "Skipping resume_from_cache because " + paths_.materialized.string());
}

TEST_F(PlanRows, ResumeWithoutTheMaterializedFileIsAFreshRun) {
  dir_.write("out.jsonl", "{\"old\":1}\n");
  options_.resume = true;
  auto p = plan();
  EXPECT_EQ(dispatched(p).size(), 4u);
  EXPECT_EQ(p.done, 0u);
  EXPECT_EQ(read_text(paths_.materialized), kMaterialized);
  EXPECT_FALSE(fs::exists(paths_.rollouts));
  EXPECT_CONTAINS(printed_, "Skipping resume_from_cache because " + paths_.materialized.string() +
                                " doesn't exist!\n");
}

TEST_F(PlanRows, ResumeNamingAnAgentThatIsNotConfiguredIsAConfigError) {
  // The earlier run was against a deployment with agent `ghost`.
  dir_.write(
      "out_materialized_inputs.jsonl",
      R"({"responses_create_params":{},"agent_ref":{"name":"a"},"_ng_task_index":0,"_ng_rollout_index":0}
{"responses_create_params":{},"agent_ref":{"name":"ghost"},"_ng_task_index":1,"_ng_rollout_index":0}
)");
  dir_.write("out.jsonl", "");
  options_.resume = true;
  auto message = config_error_of([&] { plan({"a", "b"}); });
  EXPECT_EQ(message, paths_.materialized.string() +
                         ": the rows to resume name agent(s) 'ghost' that are not "
                         "responses_api_agents instances of this config; nothing was dispatched. "
                         "Configured agents: a, b. Resume against the deployment that has them, "
                         "or run without --resume");
  EXPECT_EQ(read_text(paths_.rollouts), "");  // nothing was removed
}

TEST_F(PlanRows, InvalidInputIsAConfigErrorAndTouchesNoFile) {
  dir_.write("out.jsonl", "{\"old\":1}\n");
  dir_.write("input.jsonl", "{\"responses_create_params\":{}}\n[1]\n");
  EXPECT_EQ(config_error_of([&] { plan(); }),
            "input: " + input_.string() + " line 2: not a JSON object");
  EXPECT_EQ(read_text(paths_.rollouts), "{\"old\":1}\n");
  EXPECT_FALSE(fs::exists(paths_.materialized));

  fs::remove(input_);
  EXPECT_EQ(config_error_of([&] { plan(); }),
            "input: cannot read " + input_.string() + ": no such file or not readable");
}

TEST_F(PlanRows, InputRowProblemsAreReportedBeforeAnyFileIsTouched) {
  dir_.write("out.jsonl", "{\"old\":1}\n");
  options_.agent_name = "b";
  auto message = config_error_of([&] { plan(); });
  EXPECT_CONTAINS(message, "  line 1: agent 'b' is not a responses_api_agents instance");
  EXPECT_CONTAINS(message, "  line 2: agent 'b' is not a responses_api_agents instance");
  EXPECT_EQ(read_text(paths_.rollouts), "{\"old\":1}\n");
  EXPECT_FALSE(fs::exists(paths_.materialized));
}

}  // namespace
}  // namespace gym::rollouts
