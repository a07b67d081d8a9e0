#pragma once
// What each environment's generator produces (one task = one input row plus the recorded
// trajectories of a policy of some skill on it), and the item builders they share.
#include <array>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <vector>

#include "demo_data/rng.h"

namespace gym::demo_data {

// Weekday names, for the calendar questions of several environments.
inline const std::vector<std::string> kDays{"Monday", "Tuesday",  "Wednesday", "Thursday",
                                            "Friday", "Saturday", "Sunday"};

// Rollouts recorded per task: a collection with --num-repeats 4 replays each exactly once.
inline constexpr int kRolloutsPerTask = 4;

// One recorded rollout: the agent's final output list (model items and tool outputs, as
// simple_agent assembles them) and what the environment's /verify computes for it.
struct Trajectory {
  boost::json::array output;
  double reward = 0.0;
  boost::json::object extras;  // the verifier's fields after `reward`, in its order
};

struct Task {
  boost::json::object row;               // responses_create_params, then the verifier's row fields
  std::vector<Trajectory> trajectories;  // kRolloutsPerTask
};

// Generators, one per environment. Each call draws a new task; `index` is the task's position
// within its environment (used where the row has an id).
Task mcqa_task(Rng& rng, int index);
Task multi_step_task(Rng& rng, int index);
Task string_match_task(Rng& rng, int index);

// Which of a task's rollouts succeed: a per-task skill (easy tasks mostly right, hard ones
// mostly wrong), then one draw per rollout, so that pass@4 exceeds pass@1 as with a real model.
std::array<bool, kRolloutsPerTask> draw_outcomes(Rng& rng);

// Output items shaped as the OpenAI Responses API returns them.
boost::json::object assistant_message(Rng& rng, const std::string& text);
boost::json::object function_call(Rng& rng, const std::string& name, const std::string& arguments);
// The item simple_agent appends after running a call: exactly these three keys.
boost::json::object function_call_output(const boost::json::object& call,
                                         const std::string& output);

// A user (or system) message of an input row.
boost::json::object input_message(const std::string& role, const std::string& text);

// Plausible token usage for a rollout of `output` on create params `params`: every model turn
// reads the prompt plus everything before it; later turns hit the prompt cache.
boost::json::object usage_of(const boost::json::object& params, const boost::json::array& output);

std::string join(const std::vector<std::string>& parts, const std::string& separator);

}  // namespace gym::demo_data
