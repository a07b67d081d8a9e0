#pragma once
// The head server inside the orchestrator (runtime.md 4.4): the merged config and the process
// registry for clients such as `gym env status` and `gym eval run --no-serve`.
#include "http/router.h"

#include <boost/json/array.hpp>

#include <functional>
#include <string>

namespace gym::servers {

// `config_yaml` is served as a JSON string; `instances` returns the /server_instances array.
void add_head_routes(http::Router& router, std::string config_yaml,
                     std::function<boost::json::array()> instances);

}  // namespace gym::servers
