#include "cli/builtins.h"

#include "agents/simple_agent.h"
#include "builtin_environments.h"
#include "models/openai_model.h"
#include "models/replay_model.h"
#include "models/vllm_model.h"

namespace gym::cli {

const servers::Registry& builtin_registry() {
  static const servers::Registry registry = [] {
    servers::Registry r;
    agents::register_simple_agent(r);
    models::register_replay_model(r);
    models::register_vllm_model(r);
    models::register_openai_model(r);
    models::register_azure_openai_model(r);
    environments::register_builtin_environments(r);
    return r;
  }();
  return registry;
}

}  // namespace gym::cli
