#pragma once
// The routes every resources server has (runtime.md 4.5); environments add their tools and
// their /verify on top.
#include "http/router.h"

#include <string>

namespace gym::servers {

// GET / liveness, POST /seed_session answering {} (unless `seed_session` replaces it), and
// GET /reverify_mode answering `reverify_mode` ("stateless", "unsupported" or "unknown").
void add_resources_base_routes(http::Router& router, std::string reverify_mode = "unknown");

// Schema shared by every /verify: a run row plus the Response (both objects, required).
std::shared_ptr<const http::Schema> verify_request_schema();

}  // namespace gym::servers
