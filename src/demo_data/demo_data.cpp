#include "demo_data/demo_data.h"

#include <boost/json.hpp>
#include <fstream>
#include <set>
#include <stdexcept>

#include "core/json_text.h"
#include "demo_data/tasks.h"
#include "servers/responses_api.h"

namespace gym::demo_data {
namespace json = boost::json;
namespace fs = std::filesystem;

static_assert(kDemoRepeats == kRolloutsPerTask);

namespace {

struct EnvSpec {
  const char* resources_server;
  const char* agent;
  Task (*make)(Rng&, int);
};

// One single-turn environment graded by letter (with pass@k metrics), one multi-turn tool
// environment, one free-form grader with partial credit.
constexpr EnvSpec kEnvironments[]{
    {"mcqa", "mcqa_simple_agent", mcqa_task},
    {"example_multi_step", "example_multi_step_simple_agent", multi_step_task},
    {"string_match", "string_match_simple_agent", string_match_task},
};

// Each environment draws from its own stream, so changing one leaves the others' data alone.
std::uint64_t stream_seed(std::uint64_t seed, std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ULL;
  return Rng(seed ^ h).next();
}

// The Response a Responses API model would have returned for the whole rollout: the last
// turn's envelope with every turn's items and the summed usage, as simple_agent answers.
json::object response_envelope(Rng& rng, double created_at, const json::object& params,
                               json::array output, json::object usage) {
  return json::object{
      {"id", rng.id("resp_", 48)},
      {"created_at", created_at},
      {"error", nullptr},
      {"incomplete_details", nullptr},
      {"instructions", nullptr},
      {"metadata", json::object{}},
      {"model", "gym-demo-policy"},
      {"object", "response"},
      {"output", std::move(output)},
      {"parallel_tool_calls", params.at("parallel_tool_calls")},
      {"temperature", 1.0},
      {"tool_choice", params.at("tool_choice")},
      {"tools", params.at("tools")},
      {"top_p", 1.0},
      {"background", false},
      {"max_output_tokens", nullptr},
      {"max_tool_calls", nullptr},
      {"previous_response_id", nullptr},
      {"prompt", nullptr},
      {"reasoning", json::object{{"effort", nullptr}, {"summary", nullptr}}},
      {"service_tier", "default"},
      {"status", "completed"},
      {"text", json::object{{"format", json::object{{"type", "text"}}}, {"verbosity", "medium"}}},
      {"top_logprobs", 0},
      {"truncation", "disabled"},
      {"usage", std::move(usage)},
      {"user", nullptr},
      {"store", true}};
}

void write_line(std::ofstream& out, const json::object& row) {
  std::string line = core::render_json(row);
  line += '\n';
  out.write(line.data(), static_cast<std::streamsize>(line.size()));
}

}  // namespace

DemoData generate(const fs::path& dir, const DemoOptions& options) {
  if (options.tasks_per_env < 1)
    throw std::invalid_argument("demo data: tasks_per_env must be at least 1 (got " +
                                std::to_string(options.tasks_per_env) + ")");
  fs::create_directories(dir);
  DemoData data{dir / "demo.jsonl", dir / "demo_rollouts.jsonl", {}};
  std::ofstream inputs(data.input, std::ios::binary | std::ios::trunc);
  std::ofstream rollouts(data.rollouts, std::ios::binary | std::ios::trunc);
  if (!inputs || !rollouts) throw std::runtime_error("demo data: cannot write in " + dir.string());

  // A fixed clock (2026-01-01T00:00:00Z onwards): the files depend on the seed alone.
  constexpr double kEpoch = 1767225600.0;
  std::set<std::string> seen_inputs;
  std::int64_t line = 0;
  for (const auto& env : kEnvironments) {
    Rng rng(stream_seed(options.seed, env.resources_server));
    const json::object agent_ref{{"type", "responses_api_agents"}, {"name", env.agent}};
    for (int i = 0; i < options.tasks_per_env; ++i, ++line) {
      Task task;
      // Inputs must be distinct: replay_model tells recorded rows apart by input alone.
      for (int attempt = 0;; ++attempt) {
        task = env.make(rng, i);
        if (seen_inputs
                .insert(core::render_json(task.row.at("responses_create_params").at("input")))
                .second)
          break;
        if (attempt == 1000)
          throw std::runtime_error(std::string("demo data: cannot draw ") +
                                   std::to_string(options.tasks_per_env) + " distinct " +
                                   env.resources_server + " tasks");
      }
      json::object input = task.row;
      input["agent_ref"] = agent_ref;
      write_line(inputs, input);

      // What /verify echoes: every create-params field (docs/design/conformance.md#verify-answers).
      const json::object params =
          servers::expand_create_params(task.row.at("responses_create_params").as_object());
      for (int r = 0; r < kRolloutsPerTask; ++r) {
        auto& t = task.trajectories[static_cast<std::size_t>(r)];
        json::object usage = usage_of(params, t.output);
        json::object row{{"responses_create_params", params},
                         {"response", response_envelope(rng, kEpoch + 60.0 * line + 7.0 * r, params,
                                                        std::move(t.output), std::move(usage))},
                         {"reward", t.reward}};
        for (const auto& field : t.extras) row[field.key()] = field.value();
        row["_ng_task_index"] = line;
        row["_ng_rollout_index"] = r;
        row["agent_ref"] = agent_ref;
        write_line(rollouts, row);
      }
    }
    data.environments.push_back({env.resources_server, env.agent, options.tasks_per_env});
  }
  inputs.close();
  rollouts.close();
  if (!inputs || !rollouts)
    throw std::runtime_error("demo data: writing " + data.input.string() + " or " +
                             data.rollouts.string() + " failed");
  return data;
}

}  // namespace gym::demo_data
