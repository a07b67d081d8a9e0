#pragma once
// Without --input, the agents' local datasets of one split become the input (`--split`,
// docs/guides/evaluation.md#flags-and-config-keys).
#include <boost/json/object.hpp>

#include <filesystem>
#include <string>

namespace gym::rollouts {

// Reads every responses_api_agents instance's `datasets` entries of type `split` in config order
// from their local `jsonl_fpath`, sets `agent_ref` on rows that have none, writes
// <stem>/preprocessed_datasets/<split>.jsonl and returns its path. A missing file or no dataset
// at all is a core::ConfigError naming it.
std::filesystem::path collate_datasets(const boost::json::object& cfg, const std::string& split,
                                       const std::filesystem::path& stem);

}  // namespace gym::rollouts
