// A real server built from gym_http with routes that exercise every server behaviour the
// tests need. Prints "LISTENING <port>" once bound, serves until SIGINT/SIGTERM.
//
// It is also a fake OTLP collector (`--otlp-mode ok|500|429|hang`) for the telemetry fault
// tests: POST /v1/metrics answers 200 with an empty ExportMetricsServiceResponse (ok), that
// status (500, 429; `--retry-after <s>` adds a Retry-After header), or never (hang: the request
// is held open until the server stops). GET /stats reports under "otlp" how many requests came,
// when (ms on the monotonic clock, relative to the first), and per metric of the last decoded
// request the total (sums of sum points, counts of histogram points); under "instances", per
// service.instance.id of the decoded requests, how many requests carried it, its
// nemo.gym.server.name, nemo.run.id and process.pid, and the same per-metric totals of its
// last request (bench/telemetry_overhead.sh checks that every process exported); under
// "trace_requests" how many POST /v1/traces came (bench/trace_callgrind.sh waits for them).
//
// `--responses-delay-ms <ms>` makes POST /v1/responses a slow model instead of a failing one: it
// waits that long, then answers a minimal valid Response (one assistant message, which ends a
// simple_agent turn).
#include "http/server.h"

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

namespace asio = boost::asio;
namespace json = boost::json;
using gym::http::Request;
using gym::http::Response;
using gym::http::Schema;
using gym::http::SchemaField;

namespace {

// The fake collector's record of POST /v1/metrics (loop thread only).
struct OtlpCollector {
  std::string mode = "ok";  // ok, 500, 429, hang
  std::optional<std::string> retry_after;
  std::uint64_t requests = 0;
  std::optional<std::chrono::steady_clock::time_point> first;
  json::array times_ms;  // of every request, relative to the first
  json::object last;     // metric name -> total, of the last decoded request
  std::uint64_t undecodable = 0;
  json::object instances;  // service.instance.id -> requests, resource attributes, last totals

  void received(const Request& req) {
    const auto now = std::chrono::steady_clock::now();
    if (!first) first = now;
    ++requests;
    times_ms.emplace_back(std::chrono::duration<double, std::milli>(now - *first).count());
    if (req.header("content-type") != "application/x-protobuf" ||
        !req.header("content-encoding").empty()) {
      return;  // only plain protobuf is decoded; the fault tests send that
    }
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest message;
    if (!message.ParseFromString(req.body)) {
      ++undecodable;
      return;
    }
    last.clear();
    for (const auto& rm : message.resource_metrics()) {
      json::object totals;
      for (const auto& sm : rm.scope_metrics()) {
        for (const auto& m : sm.metrics()) {
          double total = 0;
          if (m.has_sum()) {
            for (const auto& p : m.sum().data_points()) {
              total += p.has_as_int() ? static_cast<double>(p.as_int()) : p.as_double();
            }
          } else if (m.has_histogram()) {
            for (const auto& p : m.histogram().data_points()) {
              total += static_cast<double>(p.count());
            }
          }
          last[m.name()] = total;
          totals[m.name()] = total;
        }
      }
      json::object resource;
      for (const auto& kv : rm.resource().attributes()) {
        const auto& v = kv.value();
        if (v.has_string_value()) {
          resource[kv.key()] = v.string_value();
        } else if (v.has_int_value()) {
          resource[kv.key()] = v.int_value();
        }
      }
      const auto id = resource.if_contains("service.instance.id");
      if (!id || !id->is_string()) continue;
      auto& entry = instances[id->as_string()];
      if (!entry.is_object()) {
        json::object e{{"requests", 0}};
        for (const char* key : {"nemo.gym.server.name", "nemo.run.id", "process.pid"}) {
          if (const auto* v = resource.if_contains(key)) e[key] = *v;
        }
        entry = std::move(e);
      }
      auto& e = entry.as_object();
      e["requests"] = e["requests"].to_number<std::uint64_t>() + 1;
      e["last"] = std::move(totals);
    }
  }

  json::object stats() const {
    return json::object{{"mode", mode}, {"requests", requests},       {"times_ms", times_ms},
                        {"last", last}, {"undecodable", undecodable}, {"instances", instances}};
  }
};

}  // namespace

int main(int argc, char** argv) {
  gym::http::ServerOptions opt;
  std::optional<std::string> config_yaml;  // --config-yaml: answer like a head server
  static OtlpCollector collector;
  static std::optional<int> responses_delay_ms;  // --responses-delay-ms; none: answer 500
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--host")
      opt.host = v;
    else if (k == "--port")
      opt.port = static_cast<std::uint16_t>(std::stoi(v));
    else if (k == "--max-body")
      opt.max_body_bytes = std::stoull(v);
    else if (k == "--read-timeout-ms")
      opt.read_timeout = std::chrono::milliseconds(std::stoi(v));
    else if (k == "--body-timeout-ms")
      opt.body_timeout = std::chrono::milliseconds(std::stoi(v));
    else if (k == "--max-buffered-body")
      opt.max_buffered_body_bytes = std::stoull(v);
    else if (k == "--keep-alive-ms")
      opt.keep_alive_idle = std::chrono::milliseconds(std::stoi(v));
    else if (k == "--workers")
      opt.num_workers = std::stoi(v);
    else if (k == "--cookie")
      opt.session_cookie_name = v;
    else if (k == "--otlp-mode") {
      if (v != "ok" && v != "500" && v != "429" && v != "hang") {
        std::cerr << "--otlp-mode: ok, 500, 429 or hang, not " << v << "\n";
        return 2;
      }
      collector.mode = v;
    } else if (k == "--retry-after")
      collector.retry_after = v;
    else if (k == "--responses-delay-ms")
      responses_delay_ms = std::stoi(v);
    else if (k == "--config-yaml") {
      std::ifstream in(v);
      if (!in) {
        std::cerr << "cannot read " << v << "\n";
        return 2;
      }
      std::stringstream text;
      text << in.rdbuf();
      config_yaml = text.str();
    } else {
      std::cerr << "unknown flag " << k << "\n";
      return 2;
    }
  }

  gym::http::Router router;
  static gym::http::HttpServer* server = nullptr;
  static std::atomic<std::uint64_t> trace_requests{0};
  static std::map<std::string, int> hits;

  router.get("/", [](Request&) -> asio::awaitable<Response> {
    co_return Response::json(json::object{{"status", "ok"}});
  });
  router.post("/echo",
              gym::http::json_route([](Request&, json::value& body) -> asio::awaitable<Response> {
                co_return Response::json(body);
              }));
  auto typed = std::make_shared<const Schema>(Schema::object_of({
      {"city", Schema::of(Schema::Kind::string), true},
      {"count", Schema::of(Schema::Kind::integer), true},
      {"ratio", Schema::of(Schema::Kind::number), false},
      {"flag", Schema::of(Schema::Kind::boolean), false},
      {"mode", Schema::literal_of({"a", "b"}), false},
      {"tags", Schema::list_of(Schema::of(Schema::Kind::string)), false},
      {"note", Schema::of(Schema::Kind::string, /*nullable=*/true), false},
  }));
  router.post("/typed", gym::http::json_route(
                            [](Request&, json::value& body) -> asio::awaitable<Response> {
                              co_return Response::json(body);
                            },
                            typed));
  auto strict = std::make_shared<const Schema>(
      Schema::object_of({{"input", Schema::of(Schema::Kind::any), true}}, /*forbid_extra=*/true));
  router.post("/strict", gym::http::json_route(
                             [](Request&, json::value&) -> asio::awaitable<Response> {
                               co_return Response::json(json::object{});
                             },
                             strict));
  router.post("/throw", [](Request&) -> asio::awaitable<Response> {
    throw std::runtime_error("boom");
    co_return Response{};
  });
  router.post(
      "/sleep", gym::http::json_route([](Request&, json::value& body) -> asio::awaitable<Response> {
        auto ms = body.at("ms").to_number<std::int64_t>();
        asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(ms));
        co_await t.async_wait(asio::use_awaitable);
        co_return Response::json(json::object{{"slept", ms}, {"pid", ::getpid()}});
      }));
  router.get("/stats", [](Request&) -> asio::awaitable<Response> {
    const auto& s = server->stats();
    co_return Response::json(json::object{{"connections_accepted", s.connections_accepted},
                                          {"connections_open", s.connections_open},
                                          {"max_connections_open", s.max_connections_open},
                                          {"requests", s.requests},
                                          {"pid", ::getpid()},
                                          {"otlp", collector.stats()},
                                          {"trace_requests", trace_requests.load()}});
  });
  router.post("/status",
              gym::http::json_route([](Request&, json::value& body) -> asio::awaitable<Response> {
                int code = static_cast<int>(body.at("code").to_number<std::int64_t>());
                int n = ++hits[std::string(body.at("key").as_string())];
                co_return Response::json(json::object{{"hits", n}}, code);
              }));
  router.post("/hits",
              gym::http::json_route([](Request&, json::value& body) -> asio::awaitable<Response> {
                co_return Response::json(
                    json::object{{"hits", hits[std::string(body.at("key").as_string())]}});
              }));
  router.post("/redirect",
              gym::http::json_route([](Request&, json::value& body) -> asio::awaitable<Response> {
                Response r = Response::json(json::object{});
                r.status = static_cast<int>(body.at("code").to_number<std::int64_t>());
                r.headers.push_back({"Location", std::string(body.at("to").as_string())});
                co_return r;
              }));
  // A model server whose every answer is a 500 (a failed rollout), or with --responses-delay-ms a
  // slow one; POST /hits {"key": "/v1/responses"} counts the calls.
  router.post("/v1/responses", [](Request&) -> asio::awaitable<Response> {
    ++hits["/v1/responses"];
    if (!responses_delay_ms)
      co_return Response::json(json::string("test server: the model failed on purpose"), 500);
    asio::steady_timer t(co_await asio::this_coro::executor,
                         std::chrono::milliseconds(*responses_delay_ms));
    co_await t.async_wait(asio::use_awaitable);
    co_return Response::json(json::object{
        {"id", "resp_test"},
        {"created_at", 0},
        {"model", "test-model"},
        {"object", "response"},
        {"output", json::array{json::object{
                       {"type", "message"},
                       {"id", "msg_test"},
                       {"role", "assistant"},
                       {"status", "completed"},
                       {"content", json::array{json::object{{"type", "output_text"},
                                                            {"text", "a slow answer"},
                                                            {"annotations", json::array{}}}}}}}},
        {"parallel_tool_calls", true},
        {"tool_choice", "auto"},
        {"tools", json::array{}}});
  });
  // The fake OTLP collector (see the top of this file).
  router.post("/v1/metrics", [](Request& req) -> asio::awaitable<Response> {
    collector.received(req);
    Response res;
    if (collector.mode == "hang") {
      // Never answers: the exporter's own deadline has to end the request.
      asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::hours(1));
      co_await t.async_wait(asio::use_awaitable);
      co_return res;
    }
    const bool json_body = req.header("content-type") == "application/json";
    res.content_type = json_body ? "application/json" : "application/x-protobuf";
    if (collector.mode == "ok") {
      res.body = json_body ? "{}" : "";  // an empty ExportMetricsServiceResponse
      co_return res;
    }
    res.status = std::stoi(collector.mode);
    res.content_type = "text/plain";
    res.body = "test server: collector failing on purpose";
    if (collector.retry_after) res.headers.push_back({"Retry-After", *collector.retry_after});
    co_return res;
  });
  // Spans and log records are accepted and not read (the telemetry overhead benchmark's spans
  // variant): 200 with an empty Export*ServiceResponse.
  for (const char* path : {"/v1/traces", "/v1/logs"})
    router.post(path,
                [traces = std::string_view(path) ==
                          "/v1/traces"](Request& req) -> asio::awaitable<Response> {
                  if (traces) ++trace_requests;
                  Response res;
                  const bool json_body = req.header("content-type") == "application/json";
                  res.content_type = json_body ? "application/json" : "application/x-protobuf";
                  res.body = json_body ? "{}" : "";
                  co_return res;
                });
  // A head server: the config YAML as a JSON string.
  if (config_yaml)
    router.get("/global_config_dict_yaml",
               [yaml = json::value(json::string(*config_yaml))](
                   Request&) -> asio::awaitable<Response> { co_return Response::json(yaml); });
  router.get("/method", [](Request& req) -> asio::awaitable<Response> {
    co_return Response::json(json::object{{"method", "GET"}, {"body", req.body}});
  });
  router.post("/session", [](Request& req) -> asio::awaitable<Response> {
    co_return Response::json(json::object{{"session_id", req.session_id}});
  });
  router.post("/{path}", [](Request& req) -> asio::awaitable<Response> {
    co_return Response::json(json::object{{"tool", req.path}, {"route", req.route}});
  });

  gym::http::HttpServer srv(std::move(router), opt);
  server = &srv;
  try {
    auto port = srv.bind();
    std::printf("LISTENING %u\n", port);
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return srv.run();
}
