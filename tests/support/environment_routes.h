#pragma once
// Test support, header-only: an environment's routes as a resources server serving it has them
// (the base routes, its tools, its /verify), called without sockets. Links gym_servers.
#include "core/config.h"
#include "http/router.h"
#include "route_call.h"
#include "servers/resources_server.h"

#include <boost/json.hpp>

#include <memory>
#include <stdexcept>
#include <string>

namespace gym::test {

class EnvironmentRoutes {
 public:
  // The instance is named after the implementation; `instance_config` is its block (e.g. an
  // environment's config keys).
  explicit EnvironmentRoutes(servers::Environment environment,
                             boost::json::object instance_config = {}) {
    const std::string name = environment.name;
    servers::register_environment(registry_, std::move(environment));
    impl_ = registry_.find("resources_servers", name);
    if (impl_ == nullptr) throw std::logic_error("environment " + name + " did not register");
    global_[name] = boost::json::object{
        {"resources_servers", boost::json::object{{name, std::move(instance_config)}}}};
    context_ = std::make_unique<servers::ServerContext>(global_,
                                                        core::find_server_instances(global_).at(0));
    impl_->add_routes(*context_, router_);
  }

  const servers::Implementation& impl() const { return *impl_; }
  const http::Router& router() const { return router_; }

  // The answer the server gives: an exception escaping a handler is its 500.
  http::Response call(http::Method method, const std::string& path,
                      const std::string& body = "") const {
    try {
      return call_route(router_, method, path, body);
    } catch (const std::exception& e) {
      return http::exception_response(e);
    }
  }
  http::Response post(const std::string& path, const std::string& body) const {
    return call(http::Method::post, path, body);
  }
  http::Response post_json(const std::string& path, const boost::json::value& body) const {
    return post(path, boost::json::serialize(body));
  }

 private:
  boost::json::object global_;
  servers::Registry registry_;
  const servers::Implementation* impl_ = nullptr;
  std::unique_ptr<servers::ServerContext> context_;
  http::Router router_;
};

}  // namespace gym::test
