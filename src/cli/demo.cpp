// `gym demo`: the foundation's end-to-end run. It loads the config, starts every configured
// resources server as its own process (as the orchestrator will), waits for readiness, then
// drives tasks through the pooled client: seed a session, call the tool with the session cookie,
// verify a Response that contains the call, and checks every answer.
#include "cli/commands.h"
#include "core/json_text.h"
#include "core/yaml_json.h"
#include "http/client.h"
#include "orchestrator/ports.h"
#include "orchestrator/spawn.h"
#include "servers/registry.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace gym::cli {
namespace asio = boost::asio;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kCities[] = {"San Francisco", "Tokyo", "Zürich", "Lagos", "São Paulo",
                                   "Reykjavík", "Mumbai", "Toronto"};

json::object task_row(const std::string& city) {
  json::object tool{{"type", "function"},
                    {"name", "get_weather"},
                    {"description", "Get weather information for a city"},
                    {"parameters",
                     json::object{{"type", "object"},
                                  {"properties", json::object{{"city", json::object{{"type", "string"}}}}},
                                  {"required", json::array{"city"}},
                                  {"additionalProperties", false}}},
                    {"strict", true}};
  json::array input{
      json::object{{"role", "developer"}, {"content", "You are a helpful weather assistant."}},
      json::object{{"role", "user"}, {"content", "What's the weather in " + city + "?"}}};
  return json::object{
      {"responses_create_params", json::object{{"input", input}, {"tools", json::array{tool}}}}};
}

// The Response a model would have produced: one tool call, its output, and an answer.
json::object recorded_response(const std::string& city, const std::string& tool_output, int i) {
  std::string call_id = "call_" + std::to_string(i);
  json::array output{
      json::object{{"type", "function_call"},
                   {"call_id", call_id},
                   {"name", "get_weather"},
                   {"arguments", core::render_json(json::object{{"city", city}})}},
      json::object{{"type", "function_call_output"}, {"call_id", call_id}, {"output", tool_output}},
      json::object{{"id", "msg_" + std::to_string(i)},
                   {"type", "message"},
                   {"role", "assistant"},
                   {"status", "completed"},
                   {"content", json::array{json::object{{"type", "output_text"},
                                                        {"text", "It is cold in " + city + "."},
                                                        {"annotations", json::array{}}}}}}};
  return json::object{{"id", "resp_" + std::to_string(i)}, {"created_at", 0.0},
                      {"model", "demo"}, {"object", "response"},
                      {"output", output}, {"parallel_tool_calls", true},
                      {"tool_choice", "auto"}, {"tools", json::array{}}};
}

struct Tally {
  int next = 0, done = 0, failed = 0;
  double reward_sum = 0;
  std::string first_error;
};

asio::awaitable<void> run_tasks(http::HttpClient& client, std::string base, std::string dest,
                                int tasks, Tally& t) {
  while (t.next < tasks) {
    int i = t.next++;
    std::string city = kCities[i % std::size(kCities)];
    try {
      auto row = task_row(city);
      auto seeded = co_await client.post_json(base + "/seed_session", row, {}, dest);
      if (seeded.status != 200) throw std::runtime_error("/seed_session answered " + std::to_string(seeded.status));
      auto cookies = seeded.cookies;  // the session the environment assigned
      // (arguments built before co_await: GCC 12 miscompiles brace-init temporaries across it)
      json::object args{{"city", city}};
      auto tool = co_await client.post_json(base + "/get_weather", args, cookies, dest);
      std::string expected = "The weather in " + city + " is cold.";
      if (tool.status != 200 || tool.json().at("weather_description").as_string() != expected)
        throw std::runtime_error("/get_weather answered " + std::to_string(tool.status) + " " + tool.body);
      if (!tool.cookies.empty()) cookies = tool.cookies;
      row["response"] = recorded_response(city, tool.body, i);
      auto verified = co_await client.post_json(base + "/verify", row, cookies, dest);
      if (verified.status != 200) throw std::runtime_error("/verify answered " + std::to_string(verified.status) + " " + verified.body);
      t.reward_sum += verified.json().at("reward").to_number<double>();
      ++t.done;
    } catch (const std::exception& e) {
      ++t.failed;
      if (t.first_error.empty()) t.first_error = e.what();
    }
  }
}

asio::awaitable<bool> wait_ready(http::HttpClient& client, const std::string& base, pid_t pid,
                                 int& exit_code) {
  for (;;) {
    if ((exit_code = orchestrator::poll_exit(pid)) >= 0) co_return false;
    http::ClientRequest probe;
    probe.method = http::Method::get;
    probe.url = base + "/";
    probe.retry = false;
    probe.timeout = std::chrono::seconds(5);
    try {
      co_await client.request(probe);
      co_return true;  // any HTTP answer means ready (runtime.md 3.5)
    } catch (const http::RequestError&) {
    }
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(200));
    co_await t.async_wait(asio::use_awaitable);
  }
}

}  // namespace

int run_demo(const DemoOptions& opt) {
  ConfigFlags flags = opt.config;
  if (flags.config_paths.empty())
    flags.config_paths.push_back(std::string(GYM_SOURCE_ROOT) +
                                 "/environments/example_single_tool_call/configs/"
                                 "example_single_tool_call.yaml");
  auto cfg = core::load_config(to_sources(flags));
  // The demo runs the environments only: agents and their model references are dropped.
  for (const auto& inst : core::find_server_instances(cfg))
    if (inst.server_type != "resources_servers") cfg.erase(inst.name);
  const auto& registry = servers::builtin_registry();
  core::validate_server_instances(cfg, registry.catalog());
  std::vector<core::ServerInstance> targets;
  for (auto& inst : core::find_server_instances(cfg))
    if (inst.server_type == "resources_servers") targets.push_back(inst);
  if (targets.empty())
    throw core::ConfigError("gym demo: the config has no resources_servers instance; pass one with "
                            "--config");
  // Assign host and port where the config has none, and hand the resolved config over.
  for (auto& inst : targets) {
    auto& block = cfg[inst.name].as_object()[inst.server_type].as_object()[inst.impl].as_object();
    if (!block.contains("host")) block["host"] = "127.0.0.1";
    if (!block.contains("port")) block["port"] = orchestrator::free_port();
    inst.config = block;
    std::string host(block.at("host").as_string());
    int port = block.at("port").to_number<int>();
    if (!orchestrator::port_free(host, port)) {
      std::fprintf(stderr, "error: port %d of server %s is already in use on %s; free it or set "
                   "another with ++%s.%s.%s.port=<port>\n", port, inst.name.c_str(), host.c_str(),
                   inst.name.c_str(), inst.server_type.c_str(), inst.impl.c_str());
      return 2;
    }
  }
  std::string yaml = core::to_yaml(cfg);

  std::vector<orchestrator::SpawnedServer> spawned;
  for (auto& inst : targets) spawned.push_back(orchestrator::spawn_server(inst.name, yaml));

  asio::io_context io(1);
  http::HttpClient client(io.get_executor(), http::PoolParams::from_config(cfg, 1));
  int rc = 0;
  std::vector<Tally> tallies(targets.size());
  double seconds = 0;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        for (std::size_t k = 0; k < targets.size(); ++k) {
          auto& inst = targets[k];
          std::string base = "http://" + std::string(inst.config.at("host").as_string()) + ":" +
                             std::to_string(inst.config.at("port").to_number<int>());
          int exit_code = -1;
          if (!co_await wait_ready(client, base, spawned[k].pid, exit_code)) {
            std::fprintf(stderr, "server %s exited during start-up with code %d\n",
                         inst.name.c_str(), exit_code);
            rc = 2;
            co_return;
          }
          std::printf("ready: %s (%s/%s) at %s, pid %d\n", inst.name.c_str(),
                      inst.server_type.c_str(), inst.impl.c_str(), base.c_str(), spawned[k].pid);
        }
        auto start = Clock::now();
        for (std::size_t k = 0; k < targets.size(); ++k) {
          auto& inst = targets[k];
          std::string base = "http://" + std::string(inst.config.at("host").as_string()) + ":" +
                             std::to_string(inst.config.at("port").to_number<int>());
          int workers = std::min(opt.concurrency, opt.tasks);
          auto ex = co_await asio::this_coro::executor;
          int remaining = workers;
          asio::steady_timer all_done(ex, Clock::time_point::max());
          for (int w = 0; w < workers; ++w)
            asio::co_spawn(ex, run_tasks(client, base, inst.name, opt.tasks, tallies[k]),
                           [&](std::exception_ptr) {
                             if (--remaining == 0) all_done.cancel();
                           });
          co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        seconds = std::chrono::duration<double>(Clock::now() - start).count();
      },
      [&](std::exception_ptr) { io.stop(); });  // idle pooled connections need not linger
  io.run();

  for (std::size_t k = 0; k < targets.size(); ++k) {
    const auto& t = tallies[k];
    if (rc != 0) break;
    int total = t.done + t.failed;
    std::printf("%s: %d tasks, %d verified, %d failed, mean reward %.3f, %d HTTP calls\n",
                targets[k].name.c_str(), total, t.done, t.failed,
                t.done ? t.reward_sum / t.done : 0.0, 3 * total);
    if (t.failed) {
      std::printf("  first failure: %s\n", t.first_error.c_str());
      rc = 1;
    }
  }
  if (rc == 0) {
    const auto& s = client.stats();
    int calls = 0;
    for (const auto& t : tallies) calls += 3 * (t.done + t.failed);
    std::printf("%d HTTP calls in %.2f s (%.0f calls/s); pool: %llu connections opened, %llu "
                "reuses, %llu waits\n",
                calls, seconds, seconds > 0 ? calls / seconds : 0.0,
                static_cast<unsigned long long>(s.connections_opened),
                static_cast<unsigned long long>(s.connections_reused),
                static_cast<unsigned long long>(s.queued));
  }
  for (auto& s : spawned) {
    int code = orchestrator::stop_server(s.pid, 8.0);
    std::printf("stopped %s (pid %d): exit code %d\n", s.instance.c_str(), s.pid, code);
    if (code != 0 && rc == 0) rc = 2;
    if (!s.config_file.empty()) ::unlink(s.config_file.c_str());
  }
  return rc;
}

}  // namespace gym::cli
