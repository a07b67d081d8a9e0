#pragma once
// Demo data made by the project itself, so that `make demo` runs where NeMo Gym's data is absent:
// input rows for three built-in environments and, for every task, four recorded trajectories in
// NeMo Gym's rollouts format for replay_model to play back (docs/reference/demo-data.md).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gym::demo_data {

struct DemoOptions {
  int tasks_per_env = 100;  // >= 1
  std::uint64_t seed = 7;   // same seed, same bytes
};

struct DemoEnvironment {
  std::string resources_server;  // preset name: `gym env start --resources-server <name>`
  std::string agent;             // the preset's simple_agent instance
  int tasks = 0;
};

struct DemoData {
  std::filesystem::path input;     // <dir>/demo.jsonl
  std::filesystem::path rollouts;  // <dir>/demo_rollouts.jsonl
  std::vector<DemoEnvironment> environments;
};

// Rollouts recorded per task: collect with --num-repeats 4 to replay each of them once.
inline constexpr int kDemoRepeats = 4;

// Writes <dir>/demo.jsonl (one input row per task, with agent_ref
// {"type":"responses_api_agents","name":<agent>}) and <dir>/demo_rollouts.jsonl (kDemoRepeats
// recorded rows per task: the /run result our servers compute for that trajectory, then
// _ng_task_index, _ng_rollout_index and agent_ref), creating `dir`. replay_model finds the
// rollouts beside the input (input_jsonl_fpath=<dir>/demo.jsonl). Every input is distinct.
// Throws std::invalid_argument for bad options, std::runtime_error when a file cannot be written.
DemoData generate(const std::filesystem::path& dir, const DemoOptions& options = {});

}  // namespace gym::demo_data
