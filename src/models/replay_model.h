#pragma once
// replay_model (docs/reference/replay-model.md): a model server that answers POST /v1/responses by
// replaying recorded NeMo Gym rollouts. Class ReplayResponsesAPIModel (cookie prefix).
#include "core/config.h"
#include "models/replay_store.h"
#include "servers/registry.h"

#include <chrono>
#include <string>
#include <vector>

namespace gym::models {

struct ReplayModelConfig {
  std::vector<std::string> rollouts_files;  // resolved paths, in load order
  ToolOutputCheck tool_output_check = ToolOutputCheck::semantic;
  std::chrono::steady_clock::duration latency{};  // replay_latency_ms
};

// Reads and checks the instance's keys. An empty `rollouts_jsonl_fpaths` derives
// `<dir>/<name>_rollouts.jsonl` from `input_jsonl_fpath` and every agent dataset's
// `jsonl_fpath`, keeping those that exist. Relative paths resolve against `search_roots`
// (the search roots). Throws core::ConfigError naming the key: a listed file missing, no file
// found, or a bad value.
ReplayModelConfig read_replay_model_config(const boost::json::object& global,
                                           const core::ServerInstance& instance,
                                           const std::vector<std::string>& search_roots);

void register_replay_model(servers::Registry& registry);

}  // namespace gym::models
