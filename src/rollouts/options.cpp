#include "rollouts/options.h"

#include "core/config.h"
#include "core/json_text.h"
#include "http/server.h"

#include <boost/json.hpp>

#include <cstdio>
#include <cstdlib>

namespace gym::rollouts {
namespace json = boost::json;

namespace {

std::optional<std::string> optional_string(const json::object& cfg, std::string_view key) {
  const auto* v = core::find_path(cfg, key);
  if (!v || v->is_null()) return std::nullopt;
  return core::get_string(cfg, key, "");
}

std::optional<std::int64_t> optional_int(const json::object& cfg, std::string_view key,
                                         std::int64_t min) {
  const auto* v = core::find_path(cfg, key);
  if (!v || v->is_null()) return std::nullopt;
  return core::get_int(cfg, key, 0, min, INT64_MAX);
}

RepeatPolicy read_repeats(const json::object& cfg) {
  RepeatPolicy policy;
  const auto* v = core::find_path(cfg, "num_repeats");
  if (!v || v->is_null()) return policy;
  if (!v->is_object()) {
    policy.fixed = core::get_int(cfg, "num_repeats", 1, 1, 1'000'000);
    return policy;
  }
  const auto& per = v->get_object();
  if (per.empty())
    throw core::ConfigError(
        "num_repeats: an empty mapping repeats nothing; give an int (e.g. "
        "++num_repeats=4) or {<agent>: n, _default: n}");
  for (const auto& kv : per) {
    std::string key = "num_repeats." + std::string(kv.key());
    auto n = core::get_int(cfg, key, 1, 1, 1'000'000);
    if (kv.key() == "_default") {
      policy.fallback = n;
    } else {
      policy.per_agent[std::string(kv.key())] = n;
    }
  }
  return policy;
}

}  // namespace

CollectionOptions CollectionOptions::from_config(const json::object& cfg, bool no_serve) {
  CollectionOptions o;
  // Not supported: an error, not silently ignored (docs/design/deviations.md#config).
  for (const char* key : {"prompt_config", "skills", "rollout_collection_driver"})
    if (const auto* v = cfg.if_contains(key); v && !v->is_null())
      throw core::ConfigError(std::string(key) + " is not supported in this release; remove it");
  auto output = optional_string(cfg, "output_jsonl_fpath");
  if (!output || output->empty())
    throw core::ConfigError("output_jsonl_fpath is required: pass --output FILE.jsonl");
  o.output = *output;
  if (auto in = optional_string(cfg, "input_jsonl_fpath"); in && !in->empty()) o.input = *in;
  o.agent_name = optional_string(cfg, "agent_name");
  o.limit = optional_int(cfg, "limit", 0);
  if (o.limit == 0) o.limit.reset();  // upstream: `if config.limit` (0 = no limit)
  o.num_repeats = read_repeats(cfg);
  o.num_repeats_add_seed = core::get_bool(cfg, "num_repeats_add_seed", false);
  o.concurrency = optional_int(cfg, "num_samples_in_parallel", 1);
  if (const auto* p = core::find_path(cfg, "responses_create_params"); p && !p->is_null()) {
    if (!p->is_object())
      throw core::ConfigError(
          "responses_create_params must be a mapping of fields merged into every "
          "row's responses_create_params (e.g. ++responses_create_params.temperature=0.5)");
    o.create_params_overrides = p->get_object();
  }
  o.resume = core::get_bool(cfg, "resume_from_cache", false);
  o.disable_aggregation = core::get_bool(cfg, "disable_aggregation", false);
  o.route_failures_to_sidecar = core::get_bool(cfg, "route_failures_to_sidecar", true);
  o.max_row_bytes = static_cast<std::size_t>(
      core::get_int(cfg, "http_max_request_body_bytes",
                    static_cast<std::int64_t>(http::ServerOptions{}.max_body_bytes), 1, 1ll << 40));
  o.unreachable_seconds =
      core::get_double(cfg, "deployment_unreachable_seconds", o.unreachable_seconds, 0.0, 1e9);
  o.split = optional_string(cfg, "split");
  o.quiet = core::get_bool(cfg, "quiet", false);
  o.progress_summaries = core::get_bool(cfg, "progress_summaries", !o.quiet);
  o.endpoint_error_limit = static_cast<std::size_t>(
      core::get_int(cfg, "model_endpoint_error_limit",
                    static_cast<std::int64_t>(o.endpoint_error_limit), 0, 1'000'000'000));
  if (o.split && *o.split != "train" && *o.split != "validation" && *o.split != "benchmark" &&
      *o.split != "example")
    throw core::ConfigError("split: '" + *o.split +
                            "' is not one of train, validation, benchmark, example");
  if (no_serve && !o.input)
    throw core::ConfigError(
        "input_jsonl_fpath is required with --no-serve: pass --input FILE.jsonl");
  if (!no_serve && !o.input && !o.split)
    throw core::ConfigError(
        "give --input FILE.jsonl, or --split NAME to collate the agents' datasets "
        "(train, validation, benchmark, example)");
  return o;
}

OutputPaths OutputPaths::for_output(const std::filesystem::path& output) {
  OutputPaths p;
  p.rollouts = output;
  std::string text = output.string();
  p.stem =
      text.ends_with(".jsonl") ? std::filesystem::path(text.substr(0, text.size() - 6)) : output;
  p.materialized = p.stem.string() + "_materialized_inputs.jsonl";
  p.failures = p.stem.string() + "_failures.jsonl";
  p.aggregate_metrics = p.stem.string() + "_aggregate_metrics.json";
  return p;
}

int max_rollout_attempts() {
  const char* raw = std::getenv("NEMO_GYM_MAX_ROLLOUT_ATTEMPTS");
  if (!raw || !*raw) return 3;
  char* end = nullptr;
  long n = std::strtol(raw, &end, 10);
  if (*end != '\0' || n < 1 || n > 1'000'000) {
    std::printf(
        "WARNING: could not parse NEMO_GYM_MAX_ROLLOUT_ATTEMPTS='%s' (a positive integer "
        "is expected); falling back to default 3.\n",
        raw);
    return 3;
  }
  return static_cast<int>(n);
}

}  // namespace gym::rollouts
