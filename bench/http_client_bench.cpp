// Client-side throughput of gym::http::HttpClient over plain http (the rollout hot path):
// `connections` coroutines each send `requests` sequential keep-alive POSTs of a ~2.9 KB JSON
// body to `url` (e.g. tests/support/gym_test_server's /echo) through one pooled client on one
// event loop, and the run prints requests per second. Used for before/after checks of client
// changes (bench/RESULTS.md, "HTTP client").
//
// Usage: http_client_bench <url> [connections=64] [requests per connection=2000] [body file]
// (a body file, e.g. one input row for an agent's /run, replaces the built-in body).
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "http/client.h"

namespace asio = boost::asio;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: http_client_bench <url> [connections] [requests] [body file]\n");
    return 1;
  }
  const std::string url = argv[1];
  const int connections = argc > 2 ? std::stoi(argv[2]) : 64;
  const int requests = argc > 3 ? std::stoi(argv[3]) : 2000;
  std::string body = R"({"responses_create_params":{"input":[)";
  for (int i = 0; i < 40; ++i) {
    if (i) body += ",";
    body += R"({"role":"user","content":"What is the capital of France? Answer briefly."})";
  }
  body += "]}}";
  if (argc > 4) {
    std::ifstream in(argv[4], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "http_client_bench: cannot read %s\n", argv[4]);
      return 1;
    }
    body.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  asio::io_context io(1);
  gym::http::HttpClient client(io.get_executor(), gym::http::PoolParams{});
  int failures = 0;
  int running = connections;
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < connections; ++c) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          for (int i = 0; i < requests; ++i) {
            gym::http::ClientRequest req;
            req.url = url;
            req.body = body;
            try {
              auto res = co_await client.request(std::move(req));
              if (res.status != 200) ++failures;
            } catch (const std::exception&) {
              ++failures;
            }
          }
          if (--running == 0) io.stop();
        },
        asio::detached);
  }
  io.run();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double total = static_cast<double>(connections) * requests;
  std::printf("connections=%d requests=%.0f seconds=%.3f rps=%.0f failures=%d opened=%llu\n",
              connections, total, seconds, total / seconds, failures,
              static_cast<unsigned long long>(client.stats().connections_opened));
  return failures == 0 ? 0 : 1;
}
