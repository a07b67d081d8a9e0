// Collating the agents' datasets of one split into the input: rollouts/datasets.h.
#include "rollouts/datasets.h"

#include <boost/json.hpp>

#include "rollouts_test_support.h"

namespace gym::rollouts {
namespace {

namespace json = boost::json;
using testing::config_error_of;
using testing::read_text;
using testing::ScopedEnv;
using testing::TempDir;

// One agent instance block with `datasets`.
json::value agent(json::array datasets) {
  return json::object{
      {"responses_api_agents",
       json::object{{"simple_agent", json::object{{"datasets", std::move(datasets)}}}}}};
}

json::object dataset(std::string name, std::string type, std::string path) {
  return json::object{
      {"name", std::move(name)}, {"type", std::move(type)}, {"jsonl_fpath", std::move(path)}};
}

class CollateDatasets : public ::testing::Test {
 protected:
  // collate_datasets with stdout captured into `printed_`.
  std::filesystem::path collate(const json::object& cfg, const std::string& split) {
    ::testing::internal::CaptureStdout();
    try {
      auto out = collate_datasets(cfg, split, dir_.file("run"));
      printed_ = ::testing::internal::GetCapturedStdout();
      return out;
    } catch (...) {
      printed_ = ::testing::internal::GetCapturedStdout();
      throw;
    }
  }

  TempDir dir_;
  std::string printed_;
};

TEST_F(CollateDatasets, RowsOfTheSplitInConfigOrderWithAgentRefs) {
  auto train_a =
      dir_.write("data/a_train.jsonl", "{\"responses_create_params\":{\"input\":\"t\"}}\n");
  auto val_a = dir_.write(
      "data/a_val.jsonl",
      "{\"responses_create_params\":{\"input\":\"v1\"}}\n\n"
      "{\"responses_create_params\":{\"input\":\"v2\"},\"agent_ref\":{\"name\":\"other\"}}\n");
  auto model_val = dir_.write("data/model_val.jsonl", "{\"never\":\"read\"}\n");
  auto val_b = dir_.write("data/b_val.jsonl",
                          "{\"responses_create_params\":{\"input\":\"w\"},\"expected\":\"B\"}");
  json::object cfg{
      {"agent_one",
       agent({dataset("train_a", "train", train_a), dataset("val_a", "validation", val_a)})},
      {"policy_model",
       json::object{{"responses_api_models",
                     json::object{{"openai_model",
                                   json::object{{"datasets", json::array{dataset("m", "validation",
                                                                                 model_val)}}}}}}}},
      {"agent_two", agent({dataset("val_b", "validation", val_b)})},
      {"agent_three", agent({})},
  };
  auto out = collate(cfg, "validation");
  EXPECT_EQ(out, dir_.file("run/preprocessed_datasets/validation.jsonl"));
  EXPECT_EQ(
      read_text(out),
      R"({"responses_create_params":{"input":"v1"},"agent_ref":{"type":"responses_api_agents","name":"agent_one"}}
{"responses_create_params":{"input":"v2"},"agent_ref":{"name":"other"}}
{"responses_create_params":{"input":"w"},"expected":"B","agent_ref":{"type":"responses_api_agents","name":"agent_two"}}
)");
  EXPECT_EQ(printed_, "Collated 3 rows from 2 dataset(s) into " + out.string() + "\n");

  auto train = collate(cfg, "train");
  EXPECT_EQ(
      read_text(train),
      R"({"responses_create_params":{"input":"t"},"agent_ref":{"type":"responses_api_agents","name":"agent_one"}}
)");
}

TEST_F(CollateDatasets, DatasetNumRepeatsIsNotAppliedAndWarns) {
  auto path = dir_.write("data/x.jsonl", "{\"responses_create_params\":{}}\n");
  auto entry = dataset("x", "example", path);
  entry["num_repeats"] = 4;
  auto out = collate(json::object{{"agent_one", agent({entry})}}, "example");
  EXPECT_EQ(testing::rows_of(read_text(out)).size(), 1u);
  EXPECT_EQ(printed_,
            "WARNING: agent_one.datasets[x] sets num_repeats, which collection does not apply; use "
            "--num-repeats\n"
            "Collated 1 rows from 1 dataset(s) into " +
                out.string() + "\n");
}

TEST_F(CollateDatasets, RelativePathsResolveInTheSearchRoots) {
  dir_.write("roots/extra/data/rel.jsonl", "{\"responses_create_params\":{\"input\":\"r\"}}\n");
  ScopedEnv roots("NEMO_GYM_EXTRA_ROOTS", dir_.file("roots/extra"));
  auto out =
      collate(json::object{{"agent_one", agent({dataset("rel", "benchmark", "data/rel.jsonl")})}},
              "benchmark");
  EXPECT_EQ(
      read_text(out),
      R"({"responses_create_params":{"input":"r"},"agent_ref":{"type":"responses_api_agents","name":"agent_one"}}
)");
}

TEST_F(CollateDatasets, NoDatasetOfTheSplitIsAConfigError) {
  auto path = dir_.write("data/x.jsonl", "{}\n");
  json::object cfg{{"agent_one", agent({dataset("x", "train", path)})}};
  EXPECT_EQ(config_error_of([&] { collate(cfg, "benchmark"); }),
            "no agent has a dataset of type 'benchmark': pass --input FILE.jsonl or choose another "
            "--split");
  EXPECT_FALSE(std::filesystem::exists(dir_.file("run/preprocessed_datasets")));
  EXPECT_EQ(config_error_of([&] { collate(json::object{}, "train"); }),
            "no agent has a dataset of type 'train': pass --input FILE.jsonl or choose another "
            "--split");
}

TEST_F(CollateDatasets, MissingFileIsAConfigErrorNamingTheDataset) {
  auto missing = dir_.file("data/missing.jsonl");
  json::object cfg{{"agent_one", agent({dataset("gone", "train", missing)})}};
  auto message = config_error_of([&] { collate(cfg, "train"); });
  EXPECT_CONTAINS(message, "in agent_one.datasets[gone]");
  EXPECT_CONTAINS(message, "dataset '" + missing + "' was not found");
}

TEST_F(CollateDatasets, DatasetWithoutPathIsAConfigError) {
  json::object entry{{"name", "nameless"}, {"type", "train"}};
  EXPECT_EQ(config_error_of([&] {
              collate(json::object{{"agent_one", agent({entry})}}, "train");
            }),
            "agent_one.datasets[nameless] has no jsonl_fpath");
}

}  // namespace
}  // namespace gym::rollouts
