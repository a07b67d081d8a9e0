// The Prometheus endpoint (docs/reference/telemetry.md#scrape-it-with-prometheus) judged by
// Prometheus itself:
// known values are recorded into every instrument kind of a MetricsPipeline whose endpoint is
// on a free port; `promtool check metrics` reads what GET /metrics served, and Debian's
// `prometheus` server scrapes the endpoint every second and answers PromQL queries about it.
// Also: the HTTP surface of the endpoint, a busy port, and scrapes racing the periodic reader.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "exporters/metrics_pipeline.h"
#include "exporters/prometheus/prometheus_endpoint.h"
#include "exporters/prometheus/prometheus_text.h"
#include "process.h"
#include "reserved_port.h"
#include "temp_dir.h"

namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace gym::telemetry;
using gym::exporters::MetricsPipeline;
using gym::exporters::PrometheusEndpoint;
using gym::test::ChildProcess;
using gym::test::TempDir;

constexpr const char* kSetupHint =
    "; scripts/setup.sh installs it (Debian package `prometheus`, which provides both "
    "/usr/bin/prometheus and /usr/bin/promtool)";

// A program on PATH, or "" when missing.
std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    fs::path p = fs::path(dir.empty() ? "." : dir) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return {};
}

// One HTTP/1.0 request (the peer closes after the answer, never chunks); the raw response.
std::string http_request(int port, const std::string& method, const std::string& target) {
  int fd = gym::test::connect_tcp(port);
  if (fd < 0) return {};
  gym::test::send_all(fd, method + " " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  std::string out = gym::test::read_until_close(fd, std::chrono::seconds(10));
  ::close(fd);
  return out;
}

std::string url_encode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

GetEnv env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& n) -> std::optional<std::string> {
    auto it = vars.find(n);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// A pipeline with the console exporter (into `dir`, so no network export) and the endpoint
// on `port`.
std::unique_ptr<MetricsPipeline> pipeline_on(int port, const fs::path& dir,
                                             std::map<std::string, std::string> extra = {}) {
  std::map<std::string, std::string> vars{
      {"NEMO_GYM_OTEL_ENABLED", "1"},
      {"NEMO_GYM_OTEL_EXPORTER", "console"},
      {"NEMO_GYM_OTEL_CONSOLE_PATH", (dir / "console.jsonl").string()},
      {"NEMO_GYM_OTEL_PROMETHEUS_PORT", std::to_string(port)},
      {"OTEL_RESOURCE_ATTRIBUTES", "team=rl%20infra"}};
  for (auto& [k, v] : extra) vars[k] = v;
  auto env = env_of(vars);
  return std::make_unique<MetricsPipeline>(resolve_settings(json::object{}, env),
                                           ProcessIdentity{"mcqa", "resources_servers"},
                                           "4f2a91c0be31", env);
}

TEST(PrometheusEndpoint, ServesMetricsAsText004) {
  MeterProvider provider;
  provider.create_gauge<std::int64_t>("gym.servers.active").record(3);
  PrometheusEndpoint endpoint(provider, {"127.0.0.1", 0, "orchestrator"});
  ASSERT_GT(endpoint.port(), 0);

  auto raw = http_request(endpoint.port(), "GET", "/metrics");
  EXPECT_EQ(gym::test::status_of(raw), 200) << raw;
  EXPECT_EQ(gym::test::header_of(raw, "content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(gym::test::body_of(raw).find("# TYPE gym_servers_active gauge\ngym_servers_active{"),
            std::string::npos)
      << raw;
  EXPECT_EQ(gym::test::status_of(http_request(endpoint.port(), "POST", "/metrics")), 405);
  EXPECT_EQ(gym::test::status_of(http_request(endpoint.port(), "GET", "/")), 404);

  // Each scrape collects: a new value shows in the next answer.
  provider.create_gauge<std::int64_t>("gym.servers.active").record(0);
  EXPECT_NE(http_request(endpoint.port(), "GET", "/metrics").find("} 0\n"), std::string::npos);

  endpoint.stop();
  endpoint.stop();  // idempotent
  EXPECT_LT(gym::test::connect_tcp(endpoint.port()), 0);
}

TEST(PrometheusEndpoint, BusyPortIsAStartupErrorNamingThePortAndTheRole) {
  MeterProvider provider;
  PrometheusEndpoint holder(provider, {"127.0.0.1", 0, "orchestrator"});
  TempDir dir;
  try {
    pipeline_on(holder.port(), dir.path());
    FAIL() << "the second bind should fail";
  } catch (const gym::core::ConfigError& e) {
    FAIL() << "a bind failure is a startup error (exit 2), not a config error: " << e.what();
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("port " + std::to_string(holder.port())), std::string::npos) << message;
    EXPECT_NE(message.find("mcqa (resources_servers)"), std::string::npos) << message;
    EXPECT_NE(message.find("NEMO_GYM_OTEL_PROMETHEUS_PORT"), std::string::npos) << message;
  }
}

TEST(PrometheusEndpoint, ScrapesRaceThePeriodicReaderSafely) {
  TempDir dir;
  const gym::test::ReservedPort reserved;  // held for the test: no other test takes it
  const int port = reserved.port();
  auto pipeline = pipeline_on(port, dir.path(), {{"OTEL_METRIC_EXPORT_INTERVAL", "5"}});
  ASSERT_EQ(pipeline->prometheus_port(), port);
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  std::atomic<std::int64_t> calls{0};
  pipeline->provider().create_observable_counter<std::int64_t>(
      "test.callbacks", "", "", [&](ObservableResult<std::int64_t>& r) {
        if (inside.fetch_add(1) != 0) overlapped = true;
        r.observe(++calls);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        inside.fetch_sub(1);
      });
  auto counter = pipeline->provider().create_counter<std::int64_t>("test.recorded");
  std::atomic<bool> stop{false};
  std::atomic<bool> recorded{false};
  std::thread recorder([&] {
    while (!stop) {
      counter.add(1, {{"k", "v"}});
      recorded = true;
    }
  });
  // The first scrape comes after the first record (a loaded machine may start the thread late).
  while (!recorded) std::this_thread::yield();
  std::int64_t last_seen = -1;
  for (int i = 0; i < 100; ++i) {
    auto body = gym::test::body_of(http_request(port, "GET", "/metrics"));
    std::smatch m;
    static const std::regex kRecorded(R"(test_recorded_total\{[^}]*\} (\d+)\n)");
    const bool found = std::regex_search(body, m, kRecorded);
    EXPECT_TRUE(found) << body;
    if (!found) break;  // not ASSERT: the recorder thread must be joined first
    const std::int64_t seen = std::stoll(m[1]);
    EXPECT_GE(seen, last_seen);  // cumulative: never goes back between scrapes
    last_seen = seen;
  }
  stop = true;
  recorder.join();
  EXPECT_FALSE(overlapped) << "observable callbacks ran concurrently";
  EXPECT_GE(calls.load(), 100);
  EXPECT_TRUE(pipeline->shutdown());
  EXPECT_EQ(pipeline->prometheus_port(), 0);
  EXPECT_LT(gym::test::connect_tcp(port), 0);
}

// ---- The judges ----

// Records known values into every instrument kind (the catalogue names where one fits).
void record_known_values(MeterProvider& p) {
  auto requests = p.create_counter<std::int64_t>("test.requests", "{request}", "Requests handled");
  requests.add(5, {{"http.route", "/run"}, {"ok", true}});
  requests.bind({{"http.route", "/run"}, {"ok", true}}).add(2);
  p.create_counter<std::int64_t>("test.escapes_total").add(1, {{"text", "say \"hi\"\\ \nbye"}});
  p.create_counter<double>("test.seconds", "s").add(1.5);
  auto active = p.create_up_down_counter<std::int64_t>("http.server.active_requests", "{request}");
  active.add(2, {{"http.method", "GET"}});
  active.add(-1, {{"http.method", "GET"}});
  auto verify = p.create_histogram(
      "gym.verify.duration_ms", "ms", "",
      {0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000});
  for (double v : {0.5, 1.0, 3.0, 70000.0}) verify.record(v);
  auto http = p.create_histogram(
      "http.server.request.duration", "s", "",
      {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10});
  for (double v : {0.004, 0.02, 0.02, 0.3})
    http.record(v, {{"http.route", "/verify"},
                    {"http.request.method", "POST"},
                    {"http.response.status_code", 200}});
  p.create_gauge<double>("gym.verify.success_rate", "").record(0.75);
  p.create_gauge<std::int64_t>("gym.servers.active", "").record(3);
  p.create_observable_counter<std::int64_t>(
      "gym.http.connection_pool.connect_total", "{connection}", "",
      [](ObservableResult<std::int64_t>& r) {
        r.observe(42, {{"nemo.gym.http.destination.server.name", "policy_model"}});
      });
  p.create_observable_gauge<std::int64_t>(
      "gym.host.memory.total", "By", "",
      [](ObservableResult<std::int64_t>& r) { r.observe(std::int64_t{1} << 40); });
}

// promtool's lint problems that the prescribed names (docs/reference/telemetry.md#name-conversion)
// cause by themselves:
// `<name>_ms_milliseconds` (OTel's `duration_ms` + the `ms` unit) contains an abbreviated unit
// and is not in the base unit. Any other problem fails the test.
bool prescribed_lint(const std::string& line) {
  static const std::regex kAllowed(
      R"(^(gym_rollout_duration_ms_milliseconds|gym_verify_duration_ms_milliseconds|)"
      R"(gym_http_connection_pool_queue_duration_ms_milliseconds) )"
      R"((metric names should not contain abbreviated units|)"
      R"(use base unit "seconds" instead of "milliseconds")$)");
  return std::regex_match(line, kAllowed);
}

struct QueryResult {
  json::object labels;
  double value = 0;
};

class PrometheusServer {
 public:
  PrometheusServer(const std::string& binary, const fs::path& dir, int target_port)
      : port_(reserved_.port()), log_(dir / "prometheus.log") {
    const fs::path config = dir / "prometheus.yml";
    std::ofstream(config) << fmt::format(
        "global:\n"
        "  scrape_interval: 1s\n"
        "  evaluation_interval: 1s\n"
        "scrape_configs:\n"
        "  - job_name: gym\n"
        "    scrape_interval: 1s\n"
        "    scrape_timeout: 1s\n"
        "    static_configs:\n"
        "      - targets: ['127.0.0.1:{}']\n",
        target_port);
    fs::create_directories(dir / "tsdb");
    process_ = std::make_unique<ChildProcess>(std::vector<std::string>{
        "/bin/sh", "-c",
        fmt::format("exec '{}' --config.file='{}' --storage.tsdb.path='{}' "
                    "--web.listen-address=127.0.0.1:{} 2>'{}'",
                    binary, config.string(), (dir / "tsdb").string(), port_, log_.string())});
  }
  ~PrometheusServer() {
    process_->signal(SIGTERM);
    if (process_->wait_exit(std::chrono::seconds(20)) < 0) process_->signal(SIGKILL);
  }

  std::string log() const {
    std::ifstream in(log_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  // GET on the HTTP API; the parsed JSON body, or null.
  json::value api(const std::string& target) const {
    auto body = gym::test::body_of(http_request(port_, "GET", target));
    json::error_code ec;
    auto v = json::parse(body, ec);
    return ec ? json::value() : v;
  }

  // Waits (hang guard only) until the target was scraped successfully; the last targets answer.
  json::value wait_until_up(std::chrono::seconds guard) const {
    json::value last;
    const auto deadline = std::chrono::steady_clock::now() + guard;
    while (std::chrono::steady_clock::now() < deadline) {
      last = api("/api/v1/targets");
      if (last.is_object() && last.as_object().contains("data")) {
        const json::value& targets = last.at("data").at("activeTargets");
        if (!targets.as_array().empty() && targets.at(0).at("health") == "up") return last;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return last;
  }

  // An instant query; its vector result.
  std::vector<QueryResult> query(const std::string& promql) const {
    json::value r = api("/api/v1/query?query=" + url_encode(promql));
    std::vector<QueryResult> out;
    if (!r.is_object() || r.at("status") != "success") {
      ADD_FAILURE() << promql << ": " << json::serialize(r);
      return out;
    }
    const json::value& data = r.at("data");
    if (data.at("resultType") == "scalar") {
      out.push_back({{}, std::stod(std::string(data.at("result").at(1).as_string()))});
      return out;
    }
    for (const auto& s : data.at("result").as_array()) {
      out.push_back(
          {s.at("metric").as_object(), std::stod(std::string(s.at("value").at(1).as_string()))});
    }
    return out;
  }

  // The single value of `promql` (fails unless exactly one series answers).
  double value(const std::string& promql) const {
    auto r = query(promql);
    EXPECT_EQ(r.size(), 1u) << promql;
    return r.empty() ? std::nan("") : r[0].value;
  }

 private:
  gym::test::ReservedPort reserved_;
  int port_;
  fs::path log_;
  std::unique_ptr<ChildProcess> process_;
};

std::string label(const json::object& labels, std::string_view key) {
  auto* v = labels.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string("<absent>");
}

TEST(PrometheusJudges, PromtoolAndAPrometheusServerReadOurEndpoint) {
  // The judges are required: missing binaries are a failure, never a skip.
  const std::string promtool = find_on_path("promtool");
  const std::string prometheus = find_on_path("prometheus");
  ASSERT_FALSE(promtool.empty()) << "promtool not found on PATH" << kSetupHint;
  ASSERT_FALSE(prometheus.empty()) << "prometheus not found on PATH" << kSetupHint;

  TempDir dir;
  const gym::test::ReservedPort reserved;  // held for the test: no other test takes it
  const int port = reserved.port();
  auto pipeline = pipeline_on(port, dir.path());
  ASSERT_EQ(pipeline->prometheus_port(), port);
  record_known_values(pipeline->provider());

  // (1) promtool check metrics on exactly what /metrics served.
  const std::string raw = http_request(port, "GET", "/metrics");
  ASSERT_EQ(gym::test::status_of(raw), 200) << raw;
  const std::string exposition = gym::test::body_of(raw);
  const fs::path file = dir.file("metrics.txt");
  std::ofstream(file) << exposition;
  auto check =
      gym::test::run_command(fmt::format("'{}' check metrics < '{}'", promtool, file.string()));
  // Exit 0: clean; 3: lint problems only (1 would be a parse error).
  ASSERT_TRUE(check.code == 0 || check.code == 3) << "promtool exit " << check.code << ":\n"
                                                  << check.output << "\n--- exposition:\n"
                                                  << exposition;
  std::cout << "promtool check metrics: exit " << check.code << "\n" << check.output;
  std::stringstream problems(check.output);
  for (std::string line; std::getline(problems, line);) {
    if (line.empty()) continue;
    EXPECT_TRUE(prescribed_lint(line)) << "promtool: " << line << "\n--- exposition:\n"
                                       << exposition;
  }

  // (2) A real Prometheus scraping every second.
  PrometheusServer server(prometheus, dir.path(), port);
  json::value targets = server.wait_until_up(std::chrono::seconds(90));
  ASSERT_TRUE(targets.is_object() &&
              targets.at("data").at("activeTargets").at(0).at("health") == "up")
      << json::serialize(targets) << "\n--- prometheus log:\n"
      << server.log();

  EXPECT_EQ(server.value(R"(test_requests_total{http_route="/run",ok="true"})"), 7);
  EXPECT_EQ(server.value("test_seconds_total"), 1.5);
  EXPECT_EQ(server.value(R"(http_server_active_requests{http_method="GET"})"), 1);
  EXPECT_EQ(server.value("gym_verify_success_rate"), 0.75);
  EXPECT_EQ(server.value("gym_servers_active"), 3);
  EXPECT_EQ(server.value("gym_host_memory_total_bytes"), 1099511627776.0);
  EXPECT_EQ(server.value("gym_http_connection_pool_connect_total"
                         R"({nemo_gym_http_destination_server_name="policy_model"})"),
            42);

  // Histograms: cumulative buckets, +Inf = count, sum, and a quantile Prometheus computes.
  EXPECT_EQ(server.value("gym_verify_duration_ms_milliseconds_count"), 4);
  EXPECT_EQ(server.value("gym_verify_duration_ms_milliseconds_sum"), 70004.5);
  EXPECT_EQ(server.value(R"(gym_verify_duration_ms_milliseconds_bucket{le="0.5"})"), 1);
  EXPECT_EQ(server.value(R"(gym_verify_duration_ms_milliseconds_bucket{le="1"})"), 2);
  EXPECT_EQ(server.value(R"(gym_verify_duration_ms_milliseconds_bucket{le="60000"})"), 3);
  EXPECT_EQ(server.value(R"(gym_verify_duration_ms_milliseconds_bucket{le="+Inf"})"), 4);
  EXPECT_EQ(server.query("gym_verify_duration_ms_milliseconds_bucket").size(), 17u);
  // rank 2 of 4 lies at the top of the (0.5, 1] bucket.
  EXPECT_EQ(server.value("histogram_quantile(0.5, gym_verify_duration_ms_milliseconds_bucket)"), 1);
  const std::string http_sel =
      R"({http_route="/verify",http_request_method="POST",http_response_status_code="200"})";
  EXPECT_EQ(server.value("http_server_request_duration_seconds_count" + http_sel), 4);
  EXPECT_DOUBLE_EQ(server.value("http_server_request_duration_seconds_sum" + http_sel), 0.344);
  EXPECT_EQ(server.value(R"(http_server_request_duration_seconds_bucket{le="0.025"})"), 3);
  // rank 2 of 4: bucket (0.01, 0.025] holds ranks 2 and 3 -> 0.01 + 0.015 * (1/2).
  EXPECT_DOUBLE_EQ(
      server.value("histogram_quantile(0.5, http_server_request_duration_seconds_bucket)"), 0.0175);

  // Labels: scope on every series, escaped values come back as recorded.
  auto series = server.query(R"(test_requests_total)");
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(label(series[0].labels, "otel_scope_name"), "gym-cpp");
  EXPECT_EQ(label(series[0].labels, "otel_scope_version"), GYM_VERSION);
  EXPECT_EQ(label(series[0].labels, "job"), "gym");
  auto escapes = server.query("test_escapes_total");
  ASSERT_EQ(escapes.size(), 1u);
  EXPECT_EQ(label(escapes[0].labels, "text"), "say \"hi\"\\ \nbye");
  EXPECT_EQ(escapes[0].value, 1);

  // target_info: the resource once, as labels.
  auto info = server.query("target_info");
  ASSERT_EQ(info.size(), 1u);
  EXPECT_EQ(info[0].value, 1);
  EXPECT_EQ(label(info[0].labels, "service_name"), "nemo-gym/mcqa");
  EXPECT_EQ(label(info[0].labels, "service_instance_id"),
            fmt::format("4f2a91c0be31-mcqa-{}", ::getpid()));
  EXPECT_EQ(label(info[0].labels, "nemo_gym_server_type"), "resources_servers");
  EXPECT_EQ(label(info[0].labels, "nemo_run_id"), "4f2a91c0be31");
  EXPECT_EQ(label(info[0].labels, "team"), "rl infra");
  EXPECT_EQ(label(info[0].labels, "otel_scope_name"), "<absent>");

  // Every scrape collects anew: more recording shows up in a later scrape.
  pipeline->provider()
      .create_counter<std::int64_t>("test.requests", "{request}", "Requests handled")
      .add(100, {{"http.route", "/run"}, {"ok", true}});
  double now = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    now = server.value(R"(test_requests_total{http_route="/run",ok="true"})");
    if (now == 107) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(now, 107);
  EXPECT_EQ(server.value(R"(up{job="gym"})"), 1) << server.log();
}

}  // namespace
