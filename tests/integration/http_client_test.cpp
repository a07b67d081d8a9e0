// The pooled HTTP client against real server processes on 127.0.0.1
// (docs/reference/http-client.md).
#include "http/client.h"
#include "http/pool_metrics.h"
#include "process.h"
#include "reserved_port.h"
#include "telemetry/metrics/gym_metrics.h"
#include "telemetry/metrics/meter_provider.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <numeric>
#include <thread>

namespace asio = boost::asio;
namespace json = boost::json;
using gym::http::ClientRequest;
using gym::http::ClientResponse;
using gym::http::HttpClient;
using gym::http::PoolParams;
using gym::test::ChildProcess;

namespace {

std::unique_ptr<ChildProcess> start_server(std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{gym::test::build_path("tests/support/gym_test_server"), "--port",
                                "0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<ChildProcess>(argv);
}

std::string base_url(int port) { return "http://127.0.0.1:" + std::to_string(port); }

// Runs `body` on the loop until it finishes (the pool's idle sweeper would keep the loop busy);
// rethrows its exception.
void run(asio::io_context& io, std::function<asio::awaitable<void>()> body) {
  std::exception_ptr failure;
  asio::co_spawn(io, body(), [&](std::exception_ptr e) {
    failure = e;
    io.stop();
  });
  io.run();
  io.restart();
  if (failure) std::rethrow_exception(failure);
}

// Issues `n` concurrent POSTs (built by `make`) and waits for all of them.
asio::awaitable<std::vector<ClientResponse>> fan_out(HttpClient& client, int n,
                                                     std::function<ClientRequest(int)> make,
                                                     std::vector<int>* completion_order = nullptr) {
  auto ex = co_await asio::this_coro::executor;
  std::vector<ClientResponse> out(static_cast<std::size_t>(n));
  int remaining = n;
  asio::steady_timer done(ex, std::chrono::steady_clock::time_point::max());
  for (int i = 0; i < n; ++i) {
    asio::co_spawn(
        ex,
        [&, i]() -> asio::awaitable<void> {
          out[static_cast<std::size_t>(i)] = co_await client.request(make(i));
          if (completion_order) completion_order->push_back(i);
        },
        [&](std::exception_ptr) {
          if (--remaining == 0) done.cancel();
        });
  }
  co_await done.async_wait(asio::as_tuple(asio::use_awaitable));
  co_return out;
}

ClientRequest post(const std::string& url, const json::value& body,
                   std::string destination = "test_server") {
  ClientRequest r;
  r.url = url;
  r.body = json::serialize(body);
  r.destination = std::move(destination);
  return r;
}

json::object server_stats(asio::io_context& io, HttpClient& client, int port) {
  json::object stats;
  run(io, [&]() -> asio::awaitable<void> {
    ClientRequest r;
    r.method = gym::http::Method::get;
    r.url = base_url(port) + "/stats";
    r.destination = "test_server";
    stats = (co_await client.request(r)).json().as_object();
  });
  return stats;
}

PoolParams limits(std::size_t total, std::size_t per_host, double budget = 300) {
  PoolParams p;
  p.total_limit = total;
  p.per_host_limit = per_host;
  p.retry_budget_seconds = budget;
  return p;
}

struct CountingObserver : gym::http::PoolObserver {
  int acquisitions = 0, waits = 0, ok = 0, abandoned = 0, per_host = 0, total = 0;
  void acquisition_started(const std::string& d) noexcept override {
    EXPECT_EQ(d, "test_server");
    ++acquisitions;
  }
  void wait_finished(const std::string&, gym::http::QueueConstraint c, gym::http::QueueOutcome o,
                     std::chrono::nanoseconds waited) noexcept override {
    ++waits;
    EXPECT_GE(waited.count(), 0);
    (o == gym::http::QueueOutcome::ok ? ok : abandoned)++;
    (c == gym::http::QueueConstraint::per_host ? per_host : total)++;
  }
};

}  // namespace

TEST(HttpClient, PerHostLimitCapsConnectionsAndAllComplete) {
  auto server = start_server();
  int port = server->wait_port();
  ASSERT_GT(port, 0);
  asio::io_context io;
  CountingObserver observer;
  HttpClient client(io.get_executor(), limits(0, 4), &observer);
  std::vector<ClientResponse> results;
  run(io, [&]() -> asio::awaitable<void> {
    results = co_await fan_out(client, 64, [&](int) {
      return post(base_url(port) + "/sleep", json::object{{"ms", 20}});
    });
  });
  ASSERT_EQ(results.size(), 64u);
  for (auto& r : results) EXPECT_EQ(r.status, 200);
  EXPECT_LE(client.stats().max_in_use, 4u);
  EXPECT_LE(client.stats().connections_opened, 4u);
  EXPECT_GT(client.stats().queued, 0u);
  EXPECT_EQ(observer.acquisitions, 64);
  EXPECT_EQ(observer.waits, static_cast<int>(client.stats().queued));
  EXPECT_EQ(observer.ok, observer.waits);
  EXPECT_EQ(observer.per_host, observer.waits);  // the total is unlimited
  auto stats = server_stats(io, client, port);
  EXPECT_LE(stats.at("connections_accepted").to_number<int>(), 4);  // seen from the server
  EXPECT_LE(stats.at("max_connections_open").to_number<int>(), 4);
  EXPECT_EQ(client.in_use(), 0u);
}

TEST(HttpClient, TotalLimitIsAHardCapOnSocketsAcrossDestinations) {
  auto a = start_server();
  auto b = start_server();
  int pa = a->wait_port(), pb = b->wait_port();
  ASSERT_GT(pa, 0);
  ASSERT_GT(pb, 0);
  asio::io_context io;
  HttpClient client(io.get_executor(), limits(3, 0));
  std::vector<ClientResponse> results;
  run(io, [&]() -> asio::awaitable<void> {
    results = co_await fan_out(client, 40, [&](int i) {
      return post(base_url(i % 2 ? pa : pb) + "/sleep", json::object{{"ms", 10}});
    });
  });
  for (auto& r : results) EXPECT_EQ(r.status, 200);
  EXPECT_LE(client.stats().max_in_use, 3u);
  EXPECT_LE(client.stats().max_open, 3u);
  EXPECT_LE(client.open_connections(), 3u);
}

TEST(HttpClient, WaitersForOneHostAreServedInArrivalOrder) {
  auto server = start_server();
  int port = server->wait_port();
  asio::io_context io;
  HttpClient client(io.get_executor(), limits(0, 1));
  std::vector<int> order;
  run(io, [&]() -> asio::awaitable<void> {
    co_await fan_out(
        client, 12,
        [&](int) {
          return post(base_url(port) + "/sleep", json::object{{"ms", 2}});
        },
        &order);
  });
  std::vector<int> expected(12);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
}

TEST(HttpClient, ReusesKeepAliveConnections) {
  auto server = start_server();
  int port = server->wait_port();
  asio::io_context io;
  HttpClient client(io.get_executor(), PoolParams{});
  run(io, [&]() -> asio::awaitable<void> {
    for (int i = 0; i < 20; ++i) {
      auto req1 = post(base_url(port) + "/echo", json::object{{"i", i}});
      auto r = co_await client.request(req1);
      EXPECT_EQ(r.json().at("i").to_number<int>(), i);
    }
  });
  EXPECT_EQ(client.stats().connections_opened, 1u);
  EXPECT_EQ(client.stats().connections_reused, 19u);
}

TEST(HttpClient, CookiesAreExplicitPerRequest) {
  auto server = start_server({"--cookie", "TestServer___t"});
  int port = server->wait_port();
  asio::io_context io;
  HttpClient client(io.get_executor(), PoolParams{});
  run(io, [&]() -> asio::awaitable<void> {
    auto req2 = post(base_url(port) + "/session", json::object{});
    auto first = co_await client.request(req2);
    EXPECT_EQ(first.cookies.size(), 1u);
    if (first.cookies.empty()) co_return;
    EXPECT_EQ(first.cookies[0].first, "TestServer___t");
    auto id = first.json().at("session_id").as_string();
    // No cookie jar: without passing the cookie the server sees a new client.
    auto req3 = post(base_url(port) + "/session", json::object{});
    auto second = co_await client.request(req3);
    EXPECT_NE(second.json().at("session_id").as_string(), id);
    auto with_cookie = post(base_url(port) + "/session", json::object{});
    with_cookie.cookies = first.cookies;
    auto third = co_await client.request(with_cookie);
    EXPECT_EQ(third.json().at("session_id").as_string(), id);
  });
}

TEST(HttpClient, DeadServerFailsOnceTheRetryBudgetIsSpent) {
  const gym::test::ReservedPort port_reserved;
  const int port = port_reserved.port();
  asio::io_context io;
  HttpClient client(io.get_executor(), limits(0, 0, /*budget=*/1.2));
  std::string error;
  run(io, [&]() -> asio::awaitable<void> {
    try {
      auto req4 = post(base_url(port) + "/echo", json::object{});
      co_await client.request(req4);
    } catch (const gym::http::RequestError& e) {
      error = e.what();
    }
  });
  EXPECT_NE(error.find("retry budget exhausted"), std::string::npos) << error;
  EXPECT_NE(error.find("refused"), std::string::npos) << error;
  EXPECT_GE(client.stats().retries, 1u);
}

TEST(HttpClient, RefusedConnectionsAreRetriedUntilTheServerComes) {
  // The port is the test's own from the start: a socket bound to 127.0.0.1:0 that does not
  // listen refuses connections, and nothing else can take the port before it listens (no race
  // with parallel tests for a port that was free a moment ago).
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  asio::io_context io;
  HttpClient client(io.get_executor(), limits(0, 0, 60));
  // The server comes after the first attempts were refused: it listens, answers one request.
  std::thread late([fd] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    ::listen(fd, 16);
    int conn = ::accept(fd, nullptr, nullptr);
    if (conn < 0) return;
    std::string request;
    char buf[4096];
    for (ssize_t n; request.find("\r\n\r\n") == std::string::npos &&
                    (n = ::recv(conn, buf, sizeof buf, 0)) > 0;)
      request.append(buf, static_cast<std::size_t>(n));
    const std::string answer =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
        "Connection: close\r\n\r\n{}";
    (void)::send(conn, answer.data(), answer.size(), MSG_NOSIGNAL);
    ::close(conn);
  });
  int status = 0;
  std::string error;
  try {
    run(io, [&]() -> asio::awaitable<void> {
      auto req5 = post(base_url(port) + "/echo", json::object{{"x", 1}});
      auto r = co_await client.request(req5);
      status = r.status;
    });
  } catch (const std::exception& e) {
    error = e.what();
  }
  late.join();  // before any assertion: a joinable thread must not be destroyed
  ::close(fd);
  EXPECT_EQ(error, "");
  EXPECT_EQ(status, 200);
  EXPECT_GE(client.stats().retries, 1u);
}

TEST(HttpClient, ExternalCallsTry500ThreeTimesInternalCallsOnce) {
  auto server = start_server();
  int port = server->wait_port();
  asio::io_context io;
  HttpClient client(io.get_executor(), PoolParams{});
  run(io, [&]() -> asio::awaitable<void> {
    auto ext = post(base_url(port) + "/status", json::object{{"code", 500}, {"key", "ext"}});
    ext.kind = gym::http::CallKind::external;
    auto r = co_await client.request(ext);
    EXPECT_EQ(r.status, 500);
    auto internal = post(base_url(port) + "/status", json::object{{"code", 500}, {"key", "int"}});
    EXPECT_EQ((co_await client.request(internal)).status, 500);
    auto req6 = post(base_url(port) + "/hits", json::object{{"key", "ext"}});
    auto hits_ext = co_await client.request(req6);
    auto req7 = post(base_url(port) + "/hits", json::object{{"key", "int"}});
    auto hits_int = co_await client.request(req7);
    EXPECT_EQ(hits_ext.json().at("hits").to_number<int>(), 3);
    EXPECT_EQ(hits_int.json().at("hits").to_number<int>(), 1);
  });
}

TEST(HttpClient, ExternalRateLimitIsRetriedUntilTheBudget) {
  auto server = start_server();
  int port = server->wait_port();
  asio::io_context io;
  HttpClient client(io.get_executor(), limits(0, 0, 2.6));
  std::string error;
  run(io, [&]() -> asio::awaitable<void> {
    auto ext = post(base_url(port) + "/status", json::object{{"code", 429}, {"key", "rl"}});
    ext.kind = gym::http::CallKind::external;
    try {
      co_await client.request(ext);
    } catch (const gym::http::RequestError& e) {
      error = e.what();
    }
    auto req8 = post(base_url(port) + "/hits", json::object{{"key", "rl"}});
    auto hits = co_await client.request(req8);
    // 429 is not counted as a try: more than 3 attempts happen before the budget ends.
    EXPECT_GT(hits.json().at("hits").to_number<int>(), 3);
  });
  EXPECT_NE(error.find("retry budget exhausted"), std::string::npos) << error;
}

TEST(HttpClient, FollowsRedirectsAsAiohttpDoes) {
  auto server = start_server();
  int port = server->wait_port();
  asio::io_context io;
  HttpClient client(io.get_executor(), PoolParams{});
  run(io, [&]() -> asio::awaitable<void> {
    // 307 repeats method and body.
    json::object body{{"code", 307}, {"to", "/echo"}};
    auto req9 = post(base_url(port) + "/redirect", body);
    auto r307 = co_await client.request(req9);
    EXPECT_EQ(r307.status, 200);
    EXPECT_EQ(r307.json(), json::value(body));
    // 303 continues as GET without a body.
    auto see_other =
        post(base_url(port) + "/redirect", json::object{{"code", 303}, {"to", "/method"}});
    auto r303 = co_await client.request(see_other);
    EXPECT_EQ(r303.status, 200);
    EXPECT_EQ(r303.json().at("method").as_string(), "GET");
    EXPECT_EQ(r303.json().at("body").as_string(), "");
    // A loop stops after 10 hops and returns the last redirect.
    auto forever =
        post(base_url(port) + "/redirect", json::object{{"code", 307}, {"to", "/redirect"}});
    auto loop = co_await client.request(forever);
    EXPECT_EQ(loop.status, 307);
  });
  EXPECT_EQ(client.stats().acquisitions, 2u + 2u + 11u);  // each hop is an acquisition
}

TEST(HttpClient, WaitEndedByTheBudgetIsAbandonedAndFreesNothing) {
  auto server = start_server();
  int port = server->wait_port();
  asio::io_context io;
  CountingObserver observer;
  HttpClient client(io.get_executor(), limits(0, 1, /*budget=*/0.8), &observer);
  std::string error;
  int slow_status = 0;
  run(io, [&]() -> asio::awaitable<void> {
    auto ex = co_await asio::this_coro::executor;
    asio::co_spawn(
        ex,
        [&]() -> asio::awaitable<void> {
          auto slow = post(base_url(port) + "/sleep", json::object{{"ms", 2500}});
          slow_status = (co_await client.request(slow)).status;
        },
        asio::detached);
    try {
      auto req10 = post(base_url(port) + "/echo", json::object{});
      co_await client.request(req10);
    } catch (const gym::http::RequestError& e) {
      error = e.what();
    }
    EXPECT_EQ(client.stats().abandoned, 1u);
    while (slow_status == 0) {  // let the slow request finish; the test binary's guard bounds it
      asio::steady_timer t(ex, std::chrono::milliseconds(50));
      co_await t.async_wait(asio::use_awaitable);
    }
  });
  EXPECT_EQ(slow_status, 200);
  EXPECT_NE(error.find("retry budget exhausted"), std::string::npos) << error;
  EXPECT_EQ(client.stats().abandoned, 1u);
  EXPECT_EQ(observer.abandoned, 1);
  EXPECT_EQ(client.in_use(), 0u);  // the abandoned wait took no slot
}

TEST(HttpClient, ConnectionClosedByTheServerWhileIdleIsReplaced) {
  auto server = start_server({"--keep-alive-ms", "200"});
  int port = server->wait_port();
  asio::io_context io;
  HttpClient client(io.get_executor(), PoolParams{});
  run(io, [&]() -> asio::awaitable<void> {
    auto req11 = post(base_url(port) + "/echo", json::object{});
    EXPECT_EQ((co_await client.request(req11)).status, 200);
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(600));
    co_await t.async_wait(asio::use_awaitable);  // the server closes the idle connection
    auto req12 = post(base_url(port) + "/echo", json::object{});
    EXPECT_EQ((co_await client.request(req12)).status, 200);
  });
  EXPECT_EQ(client.stats().connections_opened, 2u);
}

namespace {

// The pool metrics of a collect(): queue samples per (constraint, outcome) of `destination`,
// and its connect_total.
struct PoolFigures {
  std::map<std::string, std::uint64_t> waits;  // "per_host/ok" -> samples
  std::int64_t connects = -1;
};

PoolFigures pool_figures(const gym::telemetry::MeterProvider& provider,
                         const std::string& destination) {
  PoolFigures out;
  for (const auto& m : provider.collect().metrics) {
    if (m.descriptor.name == "gym.http.connection_pool.queue_duration_ms") {
      for (const auto& p : m.histogram_points()) {
        auto text = [&](const char* key) {
          const auto* v = p.attributes.find(key);
          return v ? std::get<std::string>(*v) : std::string("?");
        };
        if (text("nemo.gym.http.destination.server.name") != destination) continue;
        out.waits[text("nemo.gym.http.connection_pool.queue_constraint") + "/" +
                  text("nemo.gym.http.connection_pool.queue_outcome")] += p.count;
      }
    }
    if (m.descriptor.name == "gym.http.connection_pool.connect_total") {
      for (const auto& p : m.number_points()) {
        const auto* v = p.attributes.find("nemo.gym.http.destination.server.name");
        if (v && std::get<std::string>(*v) == destination)
          out.connects = std::get<std::int64_t>(p.value);
      }
    }
  }
  return out;
}

// A real facade and pool observer, read back through the provider's collect().
struct Recorded {
  gym::telemetry::MeterProvider provider;
  gym::telemetry::GymMetrics metrics{provider, gym::telemetry::ProcessRole::collector};
  gym::http::PoolMetrics observer{metrics};
};

}  // namespace

// A wait the caller cancels ends `abandoned`, with one sample, and the acquisition still counts in
// connect_total.
TEST(HttpClient, CancelledWaitIsRecordedAsAbandoned) {
  auto server = start_server();
  int port = server->wait_port();
  ASSERT_GT(port, 0);
  Recorded recorded;
  asio::io_context io;
  HttpClient client(io.get_executor(), limits(0, 1), &recorded.observer);
  asio::cancellation_signal cancel;
  bool holder_ok = false;
  std::exception_ptr waiter_failure;
  run(io, [&]() -> asio::awaitable<void> {
    auto ex = co_await asio::this_coro::executor;
    asio::steady_timer done(ex, std::chrono::steady_clock::time_point::max());
    int remaining = 2;
    auto finished = [&] {
      if (--remaining == 0) done.cancel();
    };
    const std::string url = base_url(port) + "/sleep";
    asio::co_spawn(ex, client.request(post(url, json::object{{"ms", 400}})),
                   [&](std::exception_ptr, ClientResponse r) {
                     holder_ok = r.status == 200;
                     finished();
                   });
    asio::co_spawn(
        ex, client.request(post(url, json::object{{"ms", 1}})),
        asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, ClientResponse) {
          waiter_failure = e;
          finished();
        }));
    // The second request queues behind the first (per-host limit 1); cancel it while it waits.
    while (client.stats().queued == 0) {
      asio::steady_timer t(ex, std::chrono::milliseconds(5));
      co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    cancel.emit(asio::cancellation_type::terminal);
    co_await done.async_wait(asio::as_tuple(asio::use_awaitable));
  });
  EXPECT_TRUE(holder_ok);
  EXPECT_TRUE(waiter_failure) << "a cancelled request does not complete";
  auto figures = pool_figures(recorded.provider, "test_server");
  EXPECT_EQ(figures.waits, (std::map<std::string, std::uint64_t>{{"per_host/abandoned", 1}}));
  EXPECT_EQ(figures.connects, 2);
}

// A wait cut off because its loop is torn down (a server shutting down) is still a sample.
TEST(HttpClient, WaitCutOffByLoopTeardownIsRecordedAsAbandoned) {
  auto server = start_server();
  int port = server->wait_port();
  ASSERT_GT(port, 0);
  Recorded recorded;
  {
    asio::io_context io;
    auto client = std::make_unique<HttpClient>(io.get_executor(), limits(0, 1), &recorded.observer);
    for (int i = 0; i < 2; ++i)
      asio::co_spawn(io,
                     client->request(post(base_url(port) + "/sleep", json::object{{"ms", 3000}})),
                     [](std::exception_ptr, ClientResponse) {});
    while (client->stats().queued == 0) io.run_one_for(std::chrono::milliseconds(50));
    client.reset();
  }  // the waiting coroutine is destroyed with the loop
  auto figures = pool_figures(recorded.provider, "test_server");
  EXPECT_EQ(figures.waits, (std::map<std::string, std::uint64_t>{{"per_host/abandoned", 1}}));
  EXPECT_EQ(figures.connects, 2);
}

TEST(PoolParams, DividesAggregateLimitsByWorkers) {
  json::object cfg{{"global_aiohttp_connector_limit", 1000},
                   {"global_aiohttp_connector_limit_per_host", 10}};
  auto p = PoolParams::from_config(cfg, 4);
  EXPECT_EQ(p.total_limit, 250u);
  EXPECT_EQ(p.per_host_limit, 2u);
  auto d = PoolParams::from_config(json::object{}, 1);
  EXPECT_EQ(d.total_limit, 102400u);
  EXPECT_EQ(d.per_host_limit, 1024u);
  EXPECT_EQ(d.retry_budget_seconds, 300.0);
  cfg["global_aiohttp_connector_limit_per_host"] = 3;
  try {
    PoolParams::from_config(cfg, 4);
    FAIL() << "a positive limit that floors to 0 must be rejected";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("global_aiohttp_connector_limit_per_host"),
              std::string::npos);
  }
  EXPECT_THROW(
      PoolParams::from_config(json::object{{"global_aiohttp_tcp_keepalive_probes", 500}}, 1),
      std::exception);
}

TEST(PoolParams, CapacityReportWarnsWhenIntendedConcurrencyCannotFit) {
  json::object cfg{{"global_aiohttp_connector_limit", 100},
                   {"global_aiohttp_connector_limit_per_host", 10},
                   {"global_aiohttp_intended_concurrency", 300},
                   {"global_aiohttp_intended_concurrency_per_host", 50}};
  auto p = PoolParams::from_config(cfg, 2);
  EXPECT_EQ(p.intended_per_worker, 150u);
  EXPECT_EQ(p.intended_per_host_per_worker, 25u);
  auto warnings = p.log_capacity_report();
  ASSERT_GE(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("exceeds the total connection limit"), std::string::npos);
  EXPECT_NE(warnings[1].find("exceeds the per-host connection limit"), std::string::npos);
  // The limits alone never warn.
  EXPECT_TRUE(PoolParams::from_config(json::object{}, 1).log_capacity_report().empty());
}
