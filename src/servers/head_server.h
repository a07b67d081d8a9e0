#pragma once
// The head server inside the orchestrator
// (docs/design/wire-compatibility.md#server-kinds-and-routes): the merged config and the process
// registry for clients such as `gym env status` and `gym eval run --no-serve`.
#include "http/router.h"

#include <boost/json/array.hpp>

#include <functional>
#include <string>

namespace gym::servers {

// `config_yaml` returns the config served (as a JSON string) by /global_config_dict_yaml;
// `instances` the /server_instances array. Both are called on the head server's thread.
void add_head_routes(http::Router& router, std::function<std::string()> config_yaml,
                     std::function<boost::json::array()> instances);

}  // namespace gym::servers
