#include "servers/head_server.h"

#include <boost/json.hpp>

namespace gym::servers {
namespace asio = boost::asio;
namespace json = boost::json;

void add_head_routes(http::Router& router, std::function<std::string()> config_yaml,
                     std::function<json::array()> instances) {
  router.get("/", [](http::Request&) -> asio::awaitable<http::Response> {
    co_return http::Response::json(json::object{{"status", "ok"}});
  });
  router.get(
      "/global_config_dict_yaml",
      [config_yaml = std::move(config_yaml)](http::Request&) -> asio::awaitable<http::Response> {
        co_return http::Response::json(json::string(config_yaml()));
      });
  router.get("/server_instances",
             [instances = std::move(instances)](http::Request&) -> asio::awaitable<http::Response> {
               co_return http::Response::json(instances());
             });
}

}  // namespace gym::servers
