#pragma once
// What `gym eval run` collects and where it writes (docs/guides/evaluation.md), read from the
// top-level keys of the merged config.
#include <boost/json/object.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace gym::rollouts {

// num_repeats: an int for every row, or {<agent>: n, _default: n}.
struct RepeatPolicy {
  std::int64_t fixed = 1;                         // used when per_agent is empty
  std::map<std::string, std::int64_t> per_agent;  // without `_default`
  std::optional<std::int64_t> fallback;           // `_default`
  bool is_fixed() const { return per_agent.empty() && !fallback; }
};

struct CollectionOptions {
  std::filesystem::path output;                // output_jsonl_fpath
  std::optional<std::filesystem::path> input;  // input_jsonl_fpath
  std::optional<std::string> agent_name;       // agent_name
  std::optional<std::int64_t> limit;           // limit
  RepeatPolicy num_repeats;                    // num_repeats
  bool num_repeats_add_seed = false;
  std::optional<std::int64_t> concurrency;      // num_samples_in_parallel; none = unbounded
  boost::json::object create_params_overrides;  // responses_create_params
  bool resume = false;                          // resume_from_cache
  bool disable_aggregation = false;
  bool route_failures_to_sidecar = true;  // false: upstream 0.7.0's abort on the first failure
  std::optional<std::string> split;       // without --input: the agents' datasets of this type
  // The longest input line the collector reads, which is also the largest /run body:
  // http_max_request_body_bytes (the servers' limit; http::ServerOptions has the default).
  std::size_t max_row_bytes = 0;
  // --no-serve: give up once the head server and every agent have refused connections for this
  // long (deployment_unreachable_seconds); 0 = never, the retry budget alone applies.
  double unreachable_seconds = 5;
  // quiet (--quiet): only warnings, errors and the result are printed; the servers' output goes
  // to their log files.
  bool quiet = false;
  bool progress_summaries = true;  // the per-percent blocks on stdout (default: not quiet)
  // Stop once this many rollouts in a row failed with the same 4xx from the same model endpoint
  // (a bad key, an unknown model): model_endpoint_error_limit; 0 = never.
  std::size_t endpoint_error_limit = 20;

  // Reads and validates the keys; a ConfigError names the key and the fix. `no_serve` makes
  // `input_jsonl_fpath` required; with servers, `split` is required when there is no input.
  static CollectionOptions from_config(const boost::json::object& cfg, bool no_serve);
};

// The files of a collection (docs/design/wire-compatibility.md#collection-files); <stem> is the
// output path without `.jsonl`.
struct OutputPaths {
  std::filesystem::path rollouts, materialized, failures, aggregate_metrics;
  std::filesystem::path stem;
  static OutputPaths for_output(const std::filesystem::path& output);
};

// NEMO_GYM_MAX_ROLLOUT_ATTEMPTS: a positive integer, default 3; an invalid value prints a
// warning and gives 3.
int max_rollout_attempts();

}  // namespace gym::rollouts
