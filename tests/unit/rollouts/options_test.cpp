// CollectionOptions::from_config, OutputPaths::for_output and max_rollout_attempts
// (docs/guides/evaluation.md).
#include "rollouts/options.h"

#include <boost/json.hpp>

#include "rollouts_test_support.h"

namespace gym::rollouts {
namespace {

namespace json = boost::json;
using testing::config_error_of;
using testing::obj;
using testing::ScopedEnv;

// A minimal valid config for `gym eval run --no-serve` plus `extra` keys.
json::object with_io(std::string_view extra = "") {
  std::string text = R"({"output_jsonl_fpath": "out/run.jsonl", "input_jsonl_fpath": "in.jsonl")";
  if (!extra.empty()) text += ", " + std::string(extra);
  return obj(text + "}");
}

// The ConfigError from_config throws for the config `with_io(extra)`.
std::string error_for(std::string_view extra, bool no_serve = true) {
  return config_error_of([&] { CollectionOptions::from_config(with_io(extra), no_serve); });
}

// ---- CollectionOptions: values ----

TEST(CollectionOptions, DefaultsOfEveryKey) {
  auto o = CollectionOptions::from_config(with_io(), /*no_serve=*/true);
  EXPECT_EQ(o.output, "out/run.jsonl");
  ASSERT_TRUE(o.input);
  EXPECT_EQ(*o.input, "in.jsonl");
  EXPECT_EQ(o.agent_name, std::nullopt);
  EXPECT_EQ(o.limit, std::nullopt);
  EXPECT_TRUE(o.num_repeats.is_fixed());
  EXPECT_EQ(o.num_repeats.fixed, 1);
  EXPECT_FALSE(o.num_repeats_add_seed);
  EXPECT_EQ(o.concurrency, std::nullopt);  // unbounded
  EXPECT_TRUE(o.create_params_overrides.empty());
  EXPECT_FALSE(o.resume);
  EXPECT_FALSE(o.disable_aggregation);
  EXPECT_TRUE(o.route_failures_to_sidecar);  // failures do not abort the run
  EXPECT_EQ(o.split, std::nullopt);
}

TEST(CollectionOptions, ReadsEveryKey) {
  auto o = CollectionOptions::from_config(with_io(R"(
      "agent_name": "mcqa_simple_agent", "limit": 5, "num_repeats": 3,
      "num_repeats_add_seed": true, "num_samples_in_parallel": 4,
      "responses_create_params": {"temperature": 0.5, "max_output_tokens": 64},
      "resume_from_cache": true, "disable_aggregation": true,
      "route_failures_to_sidecar": false, "split": "validation")"),
                                          /*no_serve=*/true);
  EXPECT_EQ(o.agent_name, "mcqa_simple_agent");
  EXPECT_EQ(o.limit, 5);
  EXPECT_TRUE(o.num_repeats.is_fixed());
  EXPECT_EQ(o.num_repeats.fixed, 3);
  EXPECT_TRUE(o.num_repeats_add_seed);
  EXPECT_EQ(o.concurrency, 4);
  EXPECT_EQ(json::value(o.create_params_overrides),
            json::parse(R"({"temperature": 0.5, "max_output_tokens": 64})"));
  EXPECT_TRUE(o.resume);
  EXPECT_TRUE(o.disable_aggregation);
  EXPECT_FALSE(o.route_failures_to_sidecar);
  EXPECT_EQ(o.split, "validation");
}

TEST(CollectionOptions, ValuesFromCommandLineTextAreAccepted) {
  // CLI overrides may give numbers and booleans as text (lax like OmegaConf + pydantic).
  auto o = CollectionOptions::from_config(
      with_io(R"("limit": "7", "num_repeats": "2", "resume_from_cache": "True",
                 "num_samples_in_parallel": 8.0)"),
      true);
  EXPECT_EQ(o.limit, 7);
  EXPECT_EQ(o.num_repeats.fixed, 2);
  EXPECT_TRUE(o.resume);
  EXPECT_EQ(o.concurrency, 8);
}

TEST(CollectionOptions, LimitZeroAndNullMeanNoLimit) {
  EXPECT_EQ(CollectionOptions::from_config(with_io(R"("limit": 0)"), true).limit, std::nullopt);
  EXPECT_EQ(CollectionOptions::from_config(with_io(R"("limit": null)"), true).limit, std::nullopt);
  EXPECT_EQ(CollectionOptions::from_config(with_io(R"("limit": 1)"), true).limit, 1);
}

TEST(CollectionOptions, NullKeysTakeTheirDefaults) {
  auto o = CollectionOptions::from_config(
      with_io(R"("agent_name": null, "num_repeats": null, "num_samples_in_parallel": null,
                 "responses_create_params": null, "split": null, "prompt_config": null)"),
      true);
  EXPECT_EQ(o.agent_name, std::nullopt);
  EXPECT_EQ(o.num_repeats.fixed, 1);
  EXPECT_TRUE(o.num_repeats.is_fixed());
  EXPECT_EQ(o.concurrency, std::nullopt);
  EXPECT_TRUE(o.create_params_overrides.empty());
  EXPECT_EQ(o.split, std::nullopt);
}

// ---- CollectionOptions: num_repeats ----

TEST(CollectionOptions, NumRepeatsPerAgentWithDefault) {
  auto o = CollectionOptions::from_config(
      with_io(R"("num_repeats": {"math_agent": 4, "_default": 2, "code_agent": "3"})"), true);
  EXPECT_FALSE(o.num_repeats.is_fixed());
  EXPECT_EQ(o.num_repeats.per_agent,
            (std::map<std::string, std::int64_t>{{"code_agent", 3}, {"math_agent", 4}}));
  EXPECT_EQ(o.num_repeats.fallback, 2);
}

TEST(CollectionOptions, NumRepeatsPerAgentWithoutDefault) {
  auto o = CollectionOptions::from_config(with_io(R"("num_repeats": {"math_agent": 4})"), true);
  EXPECT_FALSE(o.num_repeats.is_fixed());
  EXPECT_EQ(o.num_repeats.per_agent, (std::map<std::string, std::int64_t>{{"math_agent", 4}}));
  EXPECT_EQ(o.num_repeats.fallback, std::nullopt);
}

TEST(CollectionOptions, NumRepeatsOnlyDefaultIsNotFixed) {
  auto o = CollectionOptions::from_config(with_io(R"("num_repeats": {"_default": 5})"), true);
  EXPECT_FALSE(o.num_repeats.is_fixed());
  EXPECT_TRUE(o.num_repeats.per_agent.empty());
  EXPECT_EQ(o.num_repeats.fallback, 5);
}

TEST(CollectionOptions, NumRepeatsErrorsNameTheKey) {
  EXPECT_EQ(error_for(R"("num_repeats": 0)"),
            "config error: config key `num_repeats` must be an integer between 1 and 1000000, "
            "got 0; set it with ++num_repeats=1");
  EXPECT_EQ(error_for(R"("num_repeats": "many")"),
            "config error: config key `num_repeats` must be an integer between 1 and 1000000, "
            "got 'many'; set it with ++num_repeats=1");
  EXPECT_EQ(error_for(R"("num_repeats": [1, 2])"),
            "config error: config key `num_repeats` must be an integer between 1 and 1000000, "
            "got [1,2]; set it with ++num_repeats=1");
  EXPECT_EQ(error_for(R"("num_repeats": {"math_agent": 0})"),
            "config error: config key `num_repeats.math_agent` must be an integer between 1 and "
            "1000000, got 0; set it with ++num_repeats.math_agent=1");
  EXPECT_EQ(error_for(R"("num_repeats": {"_default": 2.5})"),
            "config error: config key `num_repeats._default` must be an integer between 1 and "
            "1000000, got 2.5; set it with ++num_repeats._default=1");
  EXPECT_EQ(error_for(R"("num_repeats": {})"),
            "num_repeats: an empty mapping repeats nothing; give an int (e.g. ++num_repeats=4) or "
            "{<agent>: n, _default: n}");
}

// ---- CollectionOptions: every other key's validation ----

TEST(CollectionOptions, OutputIsRequired) {
  const std::string expected = "output_jsonl_fpath is required: pass --output FILE.jsonl";
  EXPECT_EQ(config_error_of([] {
              CollectionOptions::from_config(obj(R"({"input_jsonl_fpath": "in.jsonl"})"), true);
            }),
            expected);
  EXPECT_EQ(error_for(R"("output_jsonl_fpath": null)"), expected);
  EXPECT_EQ(error_for(R"("output_jsonl_fpath": "")"), expected);
}

TEST(CollectionOptions, StringKeysRejectNonStrings) {
  EXPECT_EQ(error_for(R"("output_jsonl_fpath": true)"),
            "config error: config key `output_jsonl_fpath` must be a string, got true; set it "
            "with ++output_jsonl_fpath=<text>");
  EXPECT_EQ(error_for(R"("input_jsonl_fpath": {"a": 1})"),
            "config error: config key `input_jsonl_fpath` must be a string, got {\"a\":1}; set it "
            "with ++input_jsonl_fpath=<text>");
  EXPECT_EQ(error_for(R"("agent_name": [1])"),
            "config error: config key `agent_name` must be a string, got [1]; set it with "
            "++agent_name=<text>");
  EXPECT_EQ(error_for(R"("split": false)"),
            "config error: config key `split` must be a string, got false; set it with "
            "++split=<text>");
}

TEST(CollectionOptions, IntegerKeysNameTheKeyAndTheRange) {
  EXPECT_EQ(error_for(R"("limit": -1)"),
            "config error: config key `limit` must be an integer >= 0, got -1; set it with "
            "++limit=0");
  EXPECT_EQ(error_for(R"("limit": "ten")"),
            "config error: config key `limit` must be an integer >= 0, got 'ten'; set it with "
            "++limit=0");
  EXPECT_EQ(error_for(R"("num_samples_in_parallel": 0)"),
            "config error: config key `num_samples_in_parallel` must be an integer >= 1, got 0; "
            "set it with ++num_samples_in_parallel=1");
  EXPECT_EQ(error_for(R"("num_samples_in_parallel": 1.5)"),
            "config error: config key `num_samples_in_parallel` must be an integer >= 1, got 1.5; "
            "set it with ++num_samples_in_parallel=1");
}

TEST(CollectionOptions, BooleanKeysNameTheKey) {
  EXPECT_EQ(error_for(R"("num_repeats_add_seed": "yes")"),
            "config error: config key `num_repeats_add_seed` must be true or false, got 'yes'; "
            "set it with ++num_repeats_add_seed=false");
  EXPECT_EQ(error_for(R"("resume_from_cache": 1)"),
            "config error: config key `resume_from_cache` must be true or false, got 1; set it "
            "with ++resume_from_cache=false");
  EXPECT_EQ(error_for(R"("disable_aggregation": "no")"),
            "config error: config key `disable_aggregation` must be true or false, got 'no'; set "
            "it with ++disable_aggregation=false");
  EXPECT_EQ(error_for(R"("route_failures_to_sidecar": 0)"),
            "config error: config key `route_failures_to_sidecar` must be true or false, got 0; "
            "set it with ++route_failures_to_sidecar=true");
}

TEST(CollectionOptions, CreateParamsMustBeAMapping) {
  const std::string expected =
      "responses_create_params must be a mapping of fields merged into every row's "
      "responses_create_params (e.g. ++responses_create_params.temperature=0.5)";
  EXPECT_EQ(error_for(R"("responses_create_params": "temperature=0.5")"), expected);
  EXPECT_EQ(error_for(R"("responses_create_params": [0.5])"), expected);
}

TEST(CollectionOptions, SplitMustBeAKnownType) {
  for (const char* split : {"train", "validation", "benchmark", "example"})
    EXPECT_EQ(
        CollectionOptions::from_config(with_io(std::string(R"("split": ")") + split + "\""), true)
            .split,
        split);
  EXPECT_EQ(error_for(R"("split": "test")"),
            "split: 'test' is not one of train, validation, benchmark, example");
  EXPECT_EQ(error_for(R"("split": "Train")"),
            "split: 'Train' is not one of train, validation, benchmark, example");
}

TEST(CollectionOptions, UnsupportedUpstreamKeysAreRejected) {
  EXPECT_EQ(error_for(R"("prompt_config": "prompts/x.yaml")"),
            "prompt_config is not supported in this release; remove it");
  EXPECT_EQ(error_for(R"("skills": ["a"])"), "skills is not supported in this release; remove it");
  EXPECT_EQ(error_for(R"("rollout_collection_driver": {"name": "ray"})"),
            "rollout_collection_driver is not supported in this release; remove it");
}

// ---- CollectionOptions: input and split requirements ----

TEST(CollectionOptions, NoServeRequiresInput) {
  const std::string expected =
      "input_jsonl_fpath is required with --no-serve: pass --input FILE.jsonl";
  EXPECT_EQ(config_error_of([] {
              CollectionOptions::from_config(obj(R"({"output_jsonl_fpath": "o.jsonl"})"), true);
            }),
            expected);
  // An empty path is no input; a split does not replace the input without servers.
  EXPECT_EQ(error_for(R"("input_jsonl_fpath": "")"), expected);
  EXPECT_EQ(error_for(R"("input_jsonl_fpath": null, "split": "train")"), expected);
}

TEST(CollectionOptions, WithServersSplitIsRequiredWithoutInput) {
  auto cfg = obj(R"({"output_jsonl_fpath": "o.jsonl"})");
  EXPECT_EQ(config_error_of([&] { CollectionOptions::from_config(cfg, /*no_serve=*/false); }),
            "give --input FILE.jsonl, or --split NAME to collate the agents' datasets (train, "
            "validation, benchmark, example)");

  cfg["split"] = "benchmark";
  auto o = CollectionOptions::from_config(cfg, false);
  EXPECT_EQ(o.input, std::nullopt);
  EXPECT_EQ(o.split, "benchmark");

  auto with_input = CollectionOptions::from_config(with_io(), false);
  EXPECT_EQ(with_input.input, std::filesystem::path("in.jsonl"));
  EXPECT_EQ(with_input.split, std::nullopt);
}

// ---- OutputPaths ----

TEST(OutputPaths, FilesOfAJsonlOutput) {
  auto p = OutputPaths::for_output("/data/results/run.jsonl");
  EXPECT_EQ(p.rollouts, "/data/results/run.jsonl");
  EXPECT_EQ(p.stem, "/data/results/run");
  EXPECT_EQ(p.materialized, "/data/results/run_materialized_inputs.jsonl");
  EXPECT_EQ(p.failures, "/data/results/run_failures.jsonl");
  EXPECT_EQ(p.aggregate_metrics, "/data/results/run_aggregate_metrics.json");
}

TEST(OutputPaths, RelativeOutput) {
  auto p = OutputPaths::for_output("out.jsonl");
  EXPECT_EQ(p.rollouts, "out.jsonl");
  EXPECT_EQ(p.stem, "out");
  EXPECT_EQ(p.materialized, "out_materialized_inputs.jsonl");
  EXPECT_EQ(p.failures, "out_failures.jsonl");
  EXPECT_EQ(p.aggregate_metrics, "out_aggregate_metrics.json");
}

TEST(OutputPaths, OutputWithoutJsonlSuffixIsItsOwnStem) {
  auto p = OutputPaths::for_output("results/run.json");
  EXPECT_EQ(p.rollouts, "results/run.json");
  EXPECT_EQ(p.stem, "results/run.json");
  EXPECT_EQ(p.materialized, "results/run.json_materialized_inputs.jsonl");
  EXPECT_EQ(p.failures, "results/run.json_failures.jsonl");
  EXPECT_EQ(p.aggregate_metrics, "results/run.json_aggregate_metrics.json");
}

TEST(OutputPaths, OnlyTheLastJsonlSuffixIsRemoved) {
  auto p = OutputPaths::for_output("a.jsonl.d/b.jsonl.jsonl");
  EXPECT_EQ(p.stem, "a.jsonl.d/b.jsonl");
  EXPECT_EQ(p.failures, "a.jsonl.d/b.jsonl_failures.jsonl");
}

// ---- max_rollout_attempts ----

constexpr const char* kAttemptsVar = "NEMO_GYM_MAX_ROLLOUT_ATTEMPTS";

TEST(MaxRolloutAttempts, DefaultIsThree) {
  {
    ScopedEnv unset(kAttemptsVar, std::nullopt);
    EXPECT_EQ(max_rollout_attempts(), 3);
  }
  ScopedEnv empty(kAttemptsVar, "");
  EXPECT_EQ(max_rollout_attempts(), 3);
}

TEST(MaxRolloutAttempts, PositiveIntegersAreUsed) {
  for (auto [text, value] : {std::pair{"1", 1}, {"5", 5}, {"12", 12}}) {
    ScopedEnv env(kAttemptsVar, text);
    ::testing::internal::CaptureStdout();
    EXPECT_EQ(max_rollout_attempts(), value) << text;
    EXPECT_EQ(::testing::internal::GetCapturedStdout(), "") << "no warning for " << text;
  }
}

TEST(MaxRolloutAttempts, InvalidValuesWarnAndGiveThree) {
  for (const char* text : {"0", "-2", "abc", "4x", "2.5"}) {
    ScopedEnv env(kAttemptsVar, text);
    ::testing::internal::CaptureStdout();
    EXPECT_EQ(max_rollout_attempts(), 3) << text;
    EXPECT_EQ(::testing::internal::GetCapturedStdout(),
              std::string("WARNING: could not parse NEMO_GYM_MAX_ROLLOUT_ATTEMPTS='") + text +
                  "' (a positive integer is expected); falling back to default 3.\n");
  }
}

}  // namespace
}  // namespace gym::rollouts
