// Load-benchmark server for bench/http_load.sh: the /verify-sized JSON route on gym_http.
// POST /verify parses the body (json_route), reads `response.output` and `reward`, and answers
// {"reward":R,"items":N}. Prints "LISTENING <port>" once bound, serves until SIGINT/SIGTERM.
#include "http/server.h"

#include <boost/asio/awaitable.hpp>
#include <boost/json.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

namespace asio = boost::asio;
namespace json = boost::json;
using gym::http::Request;
using gym::http::Response;

namespace {

int usage(const char* argv0, const std::string& problem) {
  std::fprintf(stderr,
               "error: %s\nusage: %s [--port N (default 0: OS-chosen)] [--workers N (default 1)]\n",
               problem.c_str(), argv0);
  return 2;
}

// The small answer: how many output items the rollout has and its reward (1.0 when absent).
Response verify(const json::value& body) {
  std::int64_t items = 0;
  double reward = 1.0;
  if (const auto* obj = body.if_object()) {
    if (const auto* response = obj->if_contains("response"); response && response->is_object())
      if (const auto* output = response->as_object().if_contains("output");
          output && output->is_array())
        items = static_cast<std::int64_t>(output->as_array().size());
    if (const auto* r = obj->if_contains("reward"); r && r->is_number())
      reward = r->to_number<double>();
  }
  return Response::json(json::object{{"reward", reward}, {"items", items}});
}

}  // namespace

int main(int argc, char** argv) {
  gym::http::ServerOptions opt;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag != "--port" && flag != "--workers")
      return usage(argv[0], "unknown flag " + std::string(flag));
    if (i + 1 >= argc) return usage(argv[0], std::string(flag) + " needs a value");
    std::string value = argv[++i];
    try {
      std::size_t used = 0;
      long n = std::stol(value, &used);
      if (used != value.size()) throw std::invalid_argument(value);
      if (flag == "--port") {
        if (n < 0 || n > 65535) throw std::out_of_range(value);
        opt.port = static_cast<std::uint16_t>(n);
      } else {
        if (n < 1 || n > 1024) throw std::out_of_range(value);
        opt.num_workers = static_cast<int>(n);
      }
    } catch (const std::exception&) {
      return usage(argv[0],
                   std::string(flag) + " expects an integer in range, got '" + value + "'");
    }
  }

  gym::http::Router router;
  router.post("/verify",
              gym::http::json_route([](Request&, json::value& body) -> asio::awaitable<Response> {
                co_return verify(body);
              }));

  gym::http::HttpServer server(std::move(router), opt);
  try {
    auto port = server.bind();
    std::printf("LISTENING %u\n", static_cast<unsigned>(port));
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return server.run();
}
