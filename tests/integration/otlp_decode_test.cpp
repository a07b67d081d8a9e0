// OTLP decode by the OpenTelemetry project's own code (issue 5): a Node receiver built on
// @opentelemetry/otlp-transformer@0.214.0's generated protobuf root decodes what our
// OtlpHttpExporter sends over http/protobuf and http/json, plain and gzip, and every decoded
// field is checked against the values recorded here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "exporters/otlp/otlp_http_exporter.h"
#include "process.h"
#include "telemetry/metrics/meter_provider.h"
#include "telemetry/resource.h"

namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace gym::telemetry;
using gym::exporters::OtlpHttpExporter;
using gym::test::ChildProcess;

constexpr const char* kPackage = "@opentelemetry/otlp-transformer@0.214.0";

// node_modules of the test folder under the build dir, installed on first use; empty when npm
// is not available (the reason goes to *why).
std::string node_modules(std::string* why) {
  const fs::path dir = fs::path(gym::test::build_path("tests/integration/otlp_node"));
  const fs::path root =
      dir / "node_modules/@opentelemetry/otlp-transformer/build/src/generated/root.js";
  const fs::path stamp = dir / "node_modules/@opentelemetry/otlp-transformer/package.json";
  if (fs::exists(root) && fs::exists(stamp)) return (dir / "node_modules").string();
  if (std::string(GYM_NPM).find("NOTFOUND") != std::string::npos) {
    *why = "npm not found";
    return {};
  }
  fs::create_directories(dir);
  std::string command =
      fmt::format("cd '{}' && '{}' install --no-audit --no-fund --silent '{}' >&2", dir.string(),
                  GYM_NPM, kPackage);
  if (std::system(command.c_str()) != 0 || !fs::exists(root)) {
    *why = "`npm install " + std::string(kPackage) + "` failed (no registry access?)";
    return {};
  }
  return (dir / "node_modules").string();
}

std::string str(const json::value& v) { return std::string(v.as_string()); }

// JavaScript writes 70000.0 as 70000: read any JSON number as a double.
double num(const json::value& v) { return v.to_number<double>(); }

std::vector<double> nums(const json::value& v) {
  std::vector<double> out;
  for (const auto& x : v.as_array()) out.push_back(num(x));
  return out;
}

const json::object& metric(const json::value& request, std::string_view name) {
  for (const auto& m :
       request.at("resourceMetrics").at(0).at("scopeMetrics").at(0).at("metrics").as_array()) {
    if (m.at("name").as_string() == name) return m.as_object();
  }
  throw std::runtime_error("decoded request has no metric " + std::string(name));
}

// key -> AnyValue object
std::map<std::string, json::object> attributes(const json::value& list) {
  std::map<std::string, json::object> out;
  if (list.is_null()) return out;
  for (const auto& kv : list.as_array()) out[str(kv.at("key"))] = kv.at("value").as_object();
  return out;
}

bool has(const json::value& v, std::string_view key) {
  return v.is_object() && v.as_object().contains(key);
}

// A string field; proto3 decoders leave out empty (default) strings.
std::string text(const json::value& v, std::string_view key) {
  return has(v, key) ? str(v.at(key)) : std::string();
}

// The start and end time our snapshot holds for `name`, as decimal strings.
std::pair<std::string, std::string> times(const MetricsSnapshot& s, std::string_view name) {
  for (const auto& m : s.metrics) {
    if (m.descriptor.name == name) {
      return {std::to_string(m.start_time_unix_nano), std::to_string(m.time_unix_nano)};
    }
  }
  throw std::runtime_error("snapshot has no metric " + std::string(name));
}

void check_request(const json::value& r, const MetricsSnapshot& snapshot) {
  ASSERT_EQ(r.at("resourceMetrics").as_array().size(), 1u);
  const auto& rm = r.at("resourceMetrics").at(0);
  auto res = attributes(rm.at("resource").at("attributes"));
  EXPECT_EQ(res.size(), snapshot.resource.attributes.size());
  EXPECT_EQ(str(res["service.name"].at("stringValue")), "nemo-gym/mcqa");
  EXPECT_EQ(str(res["service.instance.id"].at("stringValue")), "4f2a91c0be31-mcqa-41237");
  EXPECT_EQ(str(res["nemo.gym.server.type"].at("stringValue")), "resources_servers");
  EXPECT_EQ(str(res["nemo.gym.version"].at("stringValue")), "0.7.0");
  EXPECT_EQ(str(res["nemo.run.id"].at("stringValue")), "4f2a91c0be31");
  EXPECT_EQ(str(res["process.pid"].at("intValue")), "41237");
  EXPECT_EQ(str(res["nv.dl.world_size"].at("intValue")), "1");
  EXPECT_EQ(str(res["telemetry.sdk.name"].at("stringValue")), "gym-cpp");
  EXPECT_EQ(str(res["team"].at("stringValue")), "rl infra");  // OTEL_RESOURCE_ATTRIBUTES
  const auto& scope = rm.at("scopeMetrics").at(0).at("scope");
  EXPECT_EQ(str(scope.at("name")), "gym-cpp");
  EXPECT_EQ(str(scope.at("version")), GYM_VERSION);
  EXPECT_EQ(rm.at("scopeMetrics").at(0).at("metrics").as_array().size(), snapshot.metrics.size());

  const auto [start, time] = times(snapshot, "test.requests");

  // Counter (int64): monotonic cumulative sum with string, bool and int attributes.
  const auto& c = metric(r, "test.requests");
  EXPECT_EQ(text(c, "unit"), "{request}");
  EXPECT_EQ(text(c, "description"), "Requests handled");
  EXPECT_EQ(c.at("sum").at("aggregationTemporality").as_int64(), 2);
  EXPECT_EQ(c.at("sum").at("isMonotonic").as_bool(), true);
  ASSERT_EQ(c.at("sum").at("dataPoints").as_array().size(), 1u);
  const auto& cp = c.at("sum").at("dataPoints").at(0);
  EXPECT_EQ(str(cp.at("asInt")), "7");
  EXPECT_EQ(str(cp.at("startTimeUnixNano")), start);
  EXPECT_EQ(str(cp.at("timeUnixNano")), time);
  auto ca = attributes(cp.at("attributes"));
  EXPECT_EQ(str(ca["http.route"].at("stringValue")), "/run");
  EXPECT_EQ(ca["ok"].at("boolValue").as_bool(), true);
  EXPECT_EQ(str(ca["http.response.status_code"].at("intValue")), "200");
  EXPECT_EQ(num(ca["ratio"].at("doubleValue")), 0.25);

  // Counter (double).
  const auto& d = metric(r, "test.seconds");
  EXPECT_EQ(num(d.at("sum").at("dataPoints").at(0).at("asDouble")), 1.5);
  EXPECT_EQ(d.at("sum").at("isMonotonic").as_bool(), true);

  // UpDownCounter: non-monotonic (false is the default, so it may be absent).
  const auto& u = metric(r, "http.server.active_requests");
  EXPECT_FALSE(has(u.at("sum"), "isMonotonic") && u.at("sum").at("isMonotonic").as_bool());
  EXPECT_EQ(u.at("sum").at("aggregationTemporality").as_int64(), 2);
  EXPECT_EQ(str(u.at("sum").at("dataPoints").at(0).at("asInt")), "1");

  // Histogram: bounds, bucket counts, count, sum, min, max.
  const auto& h = metric(r, "gym.verify.duration_ms");
  EXPECT_EQ(str(h.at("unit")), "ms");
  EXPECT_EQ(h.at("histogram").at("aggregationTemporality").as_int64(), 2);
  const auto& hp = h.at("histogram").at("dataPoints").at(0);
  EXPECT_EQ(str(hp.at("count")), "4");
  EXPECT_EQ(num(hp.at("sum")), 0.5 + 1.0 + 3.0 + 70000.0);
  EXPECT_EQ(num(hp.at("min")), 0.5);
  EXPECT_EQ(num(hp.at("max")), 70000.0);
  EXPECT_EQ(nums(hp.at("explicitBounds")),
            (std::vector<double>{0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0,
                                 2500.0, 5000.0, 10000.0, 30000.0, 60000.0}));
  EXPECT_EQ(hp.at("bucketCounts"), (json::array{"1", "1", "0", "1", "0", "0", "0", "0", "0", "0",
                                                "0", "0", "0", "0", "0", "0", "1"}));
  EXPECT_EQ(str(hp.at("startTimeUnixNano")), times(snapshot, "gym.verify.duration_ms").first);
  EXPECT_EQ(str(hp.at("timeUnixNano")), time);

  // Synchronous gauges: last value, no start time.
  const auto& g = metric(r, "gym.verify.success_rate");
  EXPECT_EQ(text(g, "unit"), "");
  EXPECT_EQ(str(g.at("gauge").at("dataPoints").at(0).at("timeUnixNano")), time);
  EXPECT_EQ(num(g.at("gauge").at("dataPoints").at(0).at("asDouble")), 0.75);
  EXPECT_FALSE(has(g.at("gauge").at("dataPoints").at(0), "startTimeUnixNano"));
  EXPECT_EQ(str(metric(r, "gym.servers.active").at("gauge").at("dataPoints").at(0).at("asInt")),
            "3");

  // Observable counter and gauge.
  const auto& oc = metric(r, "gym.http.connection_pool.connect_total");
  EXPECT_EQ(str(oc.at("unit")), "{connection}");
  EXPECT_EQ(oc.at("sum").at("isMonotonic").as_bool(), true);
  const auto& ocp = oc.at("sum").at("dataPoints").at(0);
  EXPECT_EQ(str(ocp.at("asInt")), "42");
  EXPECT_EQ(str(attributes(ocp.at("attributes"))["nemo.gym.http.destination.server.name"].at(
                "stringValue")),
            "policy_model");
  EXPECT_EQ(str(metric(r, "gym.host.memory.total").at("gauge").at("dataPoints").at(0).at("asInt")),
            "1099511627776");
}

TEST(OtlpDecode, TheOpenTelemetryDecoderReadsEveryField) {
  // The judge is required: a missing Node.js or npm package is a failure, never a skip.
  ASSERT_EQ(std::string(GYM_NODE).find("NOTFOUND"), std::string::npos)
      << "node (Node.js 20) was not found at configure time; install it (scripts/setup.sh)";
  std::string why;
  const std::string modules = node_modules(&why);
  ASSERT_FALSE(modules.empty()) << why;
  ChildProcess receiver({GYM_NODE, GYM_OTLP_RECEIVER, modules});
  const int port = receiver.wait_port();
  ASSERT_GT(port, 0) << receiver.output();

  std::map<std::string, std::string> vars{{"OTEL_RESOURCE_ATTRIBUTES", "team=rl%20infra"},
                                          {"NEMO_GYM_OTEL_ENABLED", "1"}};
  GetEnv env = [&](const std::string& n) -> std::optional<std::string> {
    auto it = vars.find(n);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  auto settings = resolve_settings(json::object{}, env);
  MeterProviderOptions options;
  options.resource = build_resource(settings, "4f2a91c0be31", {"mcqa", "resources_servers"}, env,
                                    {"node-7", 41237});
  MeterProvider provider(options);
  auto requests =
      provider.create_counter<std::int64_t>("test.requests", "{request}", "Requests handled");
  AttributeList attrs{
      {"http.route", "/run"}, {"ok", true}, {"http.response.status_code", 200}, {"ratio", 0.25}};
  requests.add(5, attrs);
  requests.bind(attrs).add(2);
  provider.create_counter<double>("test.seconds", "s").add(1.5);
  auto active =
      provider.create_up_down_counter<std::int64_t>("http.server.active_requests", "{request}");
  active.add(2, {{"http.method", "GET"}});
  active.add(-1, {{"http.method", "GET"}});
  auto verify = provider.create_histogram(
      "gym.verify.duration_ms", "ms", "",
      {0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000});
  for (double v : {0.5, 1.0, 3.0, 70000.0}) verify.record(v);
  provider.create_gauge<double>("gym.verify.success_rate", "").record(0.75);
  provider.create_gauge<std::int64_t>("gym.servers.active", "").record(3);
  provider.create_observable_counter<std::int64_t>(
      "gym.http.connection_pool.connect_total", "{connection}", "",
      [](ObservableResult<std::int64_t>& r) {
        r.observe(42, {{"nemo.gym.http.destination.server.name", "policy_model"}});
      });
  provider.create_observable_gauge<std::int64_t>(
      "gym.host.memory.total", "By", "",
      [](ObservableResult<std::int64_t>& r) { r.observe(std::int64_t{1} << 40); });
  const MetricsSnapshot snapshot = provider.collect();
  ASSERT_EQ(snapshot.metrics.size(), 8u);

  struct Case {
    OtlpProtocol protocol;
    Compression compression;
    std::string content_type;
    std::string encoding;
  };
  const std::vector<Case> cases{
      {OtlpProtocol::http_protobuf, Compression::none, "application/x-protobuf", "identity"},
      {OtlpProtocol::http_json, Compression::none, "application/json", "identity"},
      {OtlpProtocol::http_protobuf, Compression::gzip, "application/x-protobuf", "gzip"},
      {OtlpProtocol::http_json, Compression::gzip, "application/json", "gzip"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.content_type + " " + c.encoding);
    OtlpSettings s;
    s.url = fmt::format("http://127.0.0.1:{}/v1/metrics", port);
    s.protocol = c.protocol;
    s.compression = c.compression;
    OtlpHttpExporter exporter(s);
    ASSERT_EQ(exporter.export_metrics(snapshot,
                                      std::chrono::steady_clock::now() + std::chrono::seconds(20)),
              ExportResult::success)
        << receiver.output();
    std::string line = receiver.wait_for_line("DECODED ");
    ASSERT_FALSE(line.empty()) << receiver.output();
    // "<content-type> <encoding> <json>"
    auto first = line.find(' ');
    auto second = line.find(' ', first + 1);
    EXPECT_EQ(line.substr(0, first), c.content_type);
    EXPECT_EQ(line.substr(first + 1, second - first - 1), c.encoding);
    check_request(json::parse(line.substr(second + 1)), snapshot);
  }
  EXPECT_EQ(receiver.output().find("ERROR"), std::string::npos) << receiver.output();
  receiver.signal(SIGTERM);
  receiver.wait_exit();
}

}  // namespace
