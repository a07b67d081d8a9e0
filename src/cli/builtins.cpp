#include "cli/builtins.h"

#include "agents/simple_agent.h"
#include "example_multi_step/example_multi_step.h"
#include "example_session_state_mgmt/example_session_state_mgmt.h"
#include "example_single_tool_call/example_single_tool_call.h"
#include "mcqa/mcqa.h"
#include "models/openai_model.h"
#include "models/replay_model.h"
#include "models/vllm_model.h"
#include "string_match/string_match.h"
#include "xlam_fc/xlam_fc.h"

namespace gym::cli {

const servers::Registry& builtin_registry() {
  static const servers::Registry registry = [] {
    servers::Registry r;
    agents::register_simple_agent(r);
    environments::register_example_single_tool_call(r);
    models::register_replay_model(r);
    models::register_vllm_model(r);
    models::register_openai_model(r);
    models::register_azure_openai_model(r);
    environments::register_example_session_state_mgmt(r);
    environments::register_example_multi_step(r);
    environments::register_mcqa(r);
    environments::register_xlam_fc(r);
    environments::register_string_match(r);
    return r;
  }();
  return registry;
}

}  // namespace gym::cli
