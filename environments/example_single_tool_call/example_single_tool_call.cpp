#include "servers/resources_server.h"

#include <boost/json.hpp>

namespace gym::environments {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;
using http::Schema;

// SimpleWeatherResourcesServer (README.md here): one weather tool; verify always rewards 1.0.
// Registered by the generated builtin_environments.cpp (environments/CMakeLists.txt).
servers::Environment example_single_tool_call_environment() {
  return {
      "example_single_tool_call",
      "SimpleWeatherResourcesServer",
      [](servers::ServerContext&, http::Router& router) -> servers::VerifyRoute {
        auto weather = std::make_shared<const Schema>(
            Schema::object_of({{"city", Schema::of(Schema::Kind::string), true}}));
        router.post("/get_weather",
                    http::json_route(
                        [](Request&, json::value& body) -> asio::awaitable<Response> {
                          std::string city(body.at("city").get_string());
                          co_return Response::json(json::object{
                              {"city", city},
                              {"weather_description", "The weather in " + city + " is cold."}});
                        },
                        weather));
        return {[](Request&, json::value& body) -> asio::awaitable<Response> {
                  co_return Response::json(servers::verify_response(body.get_object(), 1.0));
                },
                servers::verify_request_schema()};
      },
  };
}

}  // namespace gym::environments
