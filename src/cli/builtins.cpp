// The implementations compiled into the gym binary (R1).
#include "agents/simple_agent.h"
#include "example_single_tool_call/example_single_tool_call.h"
#include "models/replay_model.h"
#include "servers/registry.h"

namespace gym::servers {

const Registry& builtin_registry() {
  static const Registry registry = [] {
    Registry r;
    agents::register_simple_agent(r);
    environments::register_example_single_tool_call(r);
    models::register_replay_model(r);
    return r;
  }();
  return registry;
}

}  // namespace gym::servers
