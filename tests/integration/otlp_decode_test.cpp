// OTLP decode by the OpenTelemetry project's own code (issue 5): a Node receiver built on
// @opentelemetry/otlp-transformer@0.214.0's generated protobuf root decodes what our
// OtlpHttpExporter sends over http/protobuf and http/json, plain and gzip, and every decoded
// field is checked against the values recorded here.
//
// The same over https (OtlpHttps.*): the receiver in its --tls mode with a throwaway CA and
// server certificate made by the `openssl` CLI at test time; gym::http::HttpClient and the
// exporter trust that CA through SSL_CERT_FILE (OpenSSL's default verify paths), in this
// process and in a gym_telemetry_recorder child, and refuse it when it is not trusted.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json.hpp>

#include "exporters/otlp/otlp_http_exporter.h"
#include "exporters/otlp/otlp_settings.h"
#include "http/client.h"
#include "otlp_receiver.h"
#include "process.h"
#include "telemetry/metrics/meter_provider.h"
#include "telemetry/resource.h"
#include "test_pki.h"

namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace gym::telemetry;
using gym::exporters::Compression;
using gym::exporters::OtlpHttpExporter;
using gym::exporters::OtlpProtocol;
using gym::exporters::OtlpSettings;
using gym::test::ChildProcess;
using gym::test::OtlpReceiver;
using gym::test::OtlpRequest;

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

// Fails the test (never skips) when the receiver did not start: no Node.js, no npm package.
::testing::AssertionResult listening(const OtlpReceiver& receiver) {
  if (receiver.error().empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << receiver.error();
}

// The snapshot every decode test exports: one instrument of each kind.
struct RecordedSnapshot {
  MeterProvider provider;
  MetricsSnapshot snapshot;
};

std::unique_ptr<RecordedSnapshot> record_snapshot() {
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
  auto out = std::unique_ptr<RecordedSnapshot>(new RecordedSnapshot{MeterProvider(options), {}});
  MeterProvider& provider = out->provider;
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
  out->snapshot = provider.collect();
  return out;
}

// Exports `snapshot` to `base` (http:// or https://) with each protocol and compression, and
// checks what the receiver decoded, and the headers it saw.
void export_every_encoding(OtlpReceiver& receiver, const std::string& base,
                           const MetricsSnapshot& snapshot) {
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
    s.url = base + "/v1/metrics";
    s.protocol = c.protocol;
    s.compression = c.compression;
    s.headers.emplace_back("x-gym-test", "otlp headers");
    OtlpHttpExporter exporter(s);
    ASSERT_EQ(exporter.export_metrics(snapshot,
                                      std::chrono::steady_clock::now() + std::chrono::seconds(20)),
              ExportResult::success)
        << receiver.output();
    // The exporter saw the receiver's answer, so the request is read back soon.
    const std::size_t index = &c - cases.data();
    ASSERT_TRUE(receiver.wait_for(index + 1, std::chrono::seconds(30))) << receiver.output();
    const OtlpRequest r = receiver.requests().at(index);
    EXPECT_EQ(r.headers.at("user-agent"), json::value("gym-cpp/" GYM_VERSION));
    EXPECT_EQ(r.headers.at("x-gym-test"), json::value("otlp headers"));
    ASSERT_TRUE(r.error.empty()) << r.error << "\n" << receiver.output();
    EXPECT_EQ(r.content_type, c.content_type);
    EXPECT_EQ(r.encoding, c.encoding);
    check_request(r.decoded, snapshot);
  }
  EXPECT_EQ(receiver.output().find("ERROR"), std::string::npos) << receiver.output();
  EXPECT_EQ(receiver.output().find("HANDSHAKE_FAILED"), std::string::npos) << receiver.output();
}

TEST(OtlpDecode, TheOpenTelemetryDecoderReadsEveryField) {
  // The judge is required: a missing Node.js or npm package is a failure, never a skip.
  OtlpReceiver receiver;
  ASSERT_TRUE(listening(receiver));
  const auto recorded = record_snapshot();
  ASSERT_EQ(recorded->snapshot.metrics.size(), 8u);
  export_every_encoding(receiver, receiver.endpoint(), recorded->snapshot);
  receiver.stop();
}

// ---- https ----

using gym::test::TestPki;
const TestPki& pki() { return gym::test::test_pki("otlp_tls"); }

// An https receiver with the given key and certificate.
std::unique_ptr<OtlpReceiver> https_receiver(const std::string& key, const std::string& cert) {
  return std::make_unique<OtlpReceiver>(OtlpReceiver::Tls{key, cert});
}

// Sets SSL_CERT_FILE for this process (OpenSSL reads it when a client creates its TLS context)
// and restores the previous value when it goes away.
class TrustStore {
 public:
  explicit TrustStore(const std::string& ca_file) {
    if (const char* v = std::getenv("SSL_CERT_FILE")) old_ = v;
    ::setenv("SSL_CERT_FILE", ca_file.c_str(), 1);
  }
  ~TrustStore() {
    if (old_) {
      ::setenv("SSL_CERT_FILE", old_->c_str(), 1);
    } else {
      ::unsetenv("SSL_CERT_FILE");
    }
  }
  TrustStore(const TrustStore&) = delete;
  TrustStore& operator=(const TrustStore&) = delete;

 private:
  std::optional<std::string> old_;
};

namespace asio = boost::asio;
namespace ghttp = gym::http;

// Outcome of one request through an HttpClient.
struct Sent {
  int status = 0;
  std::string error;  // RequestError text
  bool tls_error = false;
};

// Sends `urls` one after another through one HttpClient (its own loop, finished before
// returning); returns each outcome and the client's stats.
std::pair<std::vector<Sent>, ghttp::ClientStats> send_all(const std::vector<std::string>& urls) {
  asio::io_context io;
  ghttp::PoolParams params;
  params.retry_budget_seconds = 30;
  auto client = std::make_unique<ghttp::HttpClient>(io.get_executor(), params);
  std::vector<Sent> out;
  auto run = [&]() -> asio::awaitable<void> {
    for (const auto& url : urls) {
      ghttp::ClientRequest req;
      req.url = url;
      req.body = R"({"resourceMetrics":[]})";
      Sent s;
      try {
        const ghttp::ClientResponse res = co_await client->request(std::move(req));
        s.status = res.status;
      } catch (const ghttp::TlsError& e) {
        s.error = e.what();
        s.tls_error = true;
      } catch (const ghttp::RequestError& e) {
        s.error = e.what();
      }
      out.push_back(s);
    }
  };
  auto done = asio::co_spawn(io, run(), asio::use_future);
  while (done.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) io.run_one();
  done.get();
  const ghttp::ClientStats stats = client->stats();
  client.reset();
  return {out, stats};
}

TEST(OtlpHttps, HttpClientVerifiesTheServerAndKeepsTheConnection) {
  ASSERT_TRUE(pki().error.empty()) << pki().error;
  auto receiver = https_receiver(pki().key, pki().cert);
  ASSERT_TRUE(listening(*receiver));
  const int port = receiver->port();
  TrustStore trust(pki().ca);

  // Two requests by host name: one TLS connection, kept alive and reused.
  const std::string url = fmt::format("https://localhost:{}/v1/metrics", port);
  auto [sent, stats] = send_all({url, url});
  ASSERT_EQ(sent.size(), 2u);
  for (const auto& s : sent) EXPECT_EQ(s.status, 200) << s.error << "\n" << receiver->output();
  EXPECT_EQ(stats.connections_opened, 1u);
  EXPECT_EQ(stats.connections_reused, 1u);
  EXPECT_EQ(stats.retries, 0u);
  ASSERT_TRUE(receiver->wait_for(2, std::chrono::seconds(30))) << receiver->output();
  EXPECT_EQ(receiver->requests().at(0).headers.at("connection"), json::value(1));
  EXPECT_EQ(receiver->requests().at(1).headers.at("connection"), json::value(1));

  // By IP address: the certificate's IP SAN is checked.
  auto [by_ip, ip_stats] = send_all({fmt::format("https://127.0.0.1:{}/v1/metrics", port)});
  EXPECT_EQ(by_ip.at(0).status, 200) << by_ip.at(0).error;
  EXPECT_EQ(ip_stats.connections_opened, 1u);

  EXPECT_EQ(receiver->output().find("ERROR"), std::string::npos) << receiver->output();
  EXPECT_EQ(receiver->output().find("HANDSHAKE_FAILED"), std::string::npos) << receiver->output();
  receiver->stop();
}

TEST(OtlpHttps, HttpClientRefusesAnUntrustedCertificateOrAnotherHostsCertificateAtOnce) {
  ASSERT_TRUE(pki().error.empty()) << pki().error;
  auto receiver = https_receiver(pki().key, pki().cert);
  ASSERT_TRUE(listening(*receiver));
  const int port = receiver->port();
  auto wrong = https_receiver(pki().wrong_key, pki().wrong_cert);
  ASSERT_TRUE(listening(*wrong));
  const int wrong_port = wrong->port();

  {
    // A trust store without our CA: a TlsError naming the host and OpenSSL's reason, with no
    // retry although the request may retry for 30 s.
    TrustStore trust(pki().other_ca);
    const auto start = std::chrono::steady_clock::now();
    auto [sent, stats] = send_all({fmt::format("https://localhost:{}/v1/metrics", port)});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_TRUE(sent[0].tls_error) << sent[0].error;
    EXPECT_NE(sent[0].error.find(fmt::format("TLS handshake with localhost:{} failed", port)),
              std::string::npos)
        << sent[0].error;
    EXPECT_NE(sent[0].error.find("certificate verify failed"), std::string::npos) << sent[0].error;
    EXPECT_NE(sent[0].error.find("unable to get local issuer certificate"), std::string::npos)
        << sent[0].error;
    EXPECT_EQ(stats.retries, 0u);
    EXPECT_EQ(stats.connections_opened, 1u);
    EXPECT_LT(seconds, 5.0);
    std::cout << "[untrusted] " << sent[0].error << "\n";
  }
  {
    // Trusted CA, but a certificate for another host name.
    TrustStore trust(pki().ca);
    auto [sent, stats] = send_all({fmt::format("https://localhost:{}/v1/metrics", wrong_port)});
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_TRUE(sent[0].tls_error) << sent[0].error;
    EXPECT_NE(sent[0].error.find(fmt::format("localhost:{}", wrong_port)), std::string::npos)
        << sent[0].error;
    EXPECT_NE(sent[0].error.find("hostname mismatch"), std::string::npos) << sent[0].error;
    EXPECT_EQ(stats.retries, 0u);
    std::cout << "[wrong host] " << sent[0].error << "\n";

    // ... and by IP address, which that certificate does not name either.
    auto [by_ip, ip_stats] = send_all({fmt::format("https://127.0.0.1:{}/v1/metrics", wrong_port)});
    EXPECT_TRUE(by_ip.at(0).tls_error) << by_ip.at(0).error;
    EXPECT_NE(by_ip.at(0).error.find("IP address mismatch"), std::string::npos)
        << by_ip.at(0).error;
  }
  EXPECT_EQ(receiver->output().find("DECODED"), std::string::npos) << receiver->output();
  EXPECT_EQ(wrong->output().find("DECODED"), std::string::npos) << wrong->output();
  receiver->stop();
  wrong->stop();
}

TEST(OtlpHttps, TheOpenTelemetryDecoderReadsEveryFieldOverHttps) {
  ASSERT_TRUE(pki().error.empty()) << pki().error;
  auto receiver = https_receiver(pki().key, pki().cert);
  ASSERT_TRUE(listening(*receiver));
  const int port = receiver->port();
  TrustStore trust(pki().ca);
  const auto recorded = record_snapshot();
  ASSERT_EQ(recorded->snapshot.metrics.size(), 8u);
  export_every_encoding(*receiver, fmt::format("https://localhost:{}", port), recorded->snapshot);
  receiver->stop();
}

// What a gym_telemetry_recorder child reported, logged, and the receiver decoded.
struct RecorderRun {
  int exit_code = -1;
  json::object result;  // the recorder's JSON line
  std::string output;   // its stdout and stderr
};

RecorderRun run_recorder(int port, const std::string& ca_file) {
  // Telemetry from the environment as in a real process; everything the developer's shell may
  // export is neutralised (empty counts as unset, telemetry.md 3.2).
  const std::vector<std::string> env{
      "NEMO_GYM_OTEL_ENABLED=1",
      fmt::format("OTEL_EXPORTER_OTLP_ENDPOINT=https://localhost:{}", port),
      "OTEL_METRIC_EXPORT_INTERVAL=500",
      "SSL_CERT_FILE=" + ca_file,
      "OTEL_SDK_DISABLED=",
      "NEMO_GYM_OTEL_EXPORTER=",
      "NEMO_LENS_EXPORTER=",
      "NEMO_GYM_OTEL_METRICS_ENABLED=",
      "NEMO_LENS_METRICS_ENABLED=",
      "OTEL_METRIC_EXPORT_TIMEOUT=",
      "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=",
      "OTEL_EXPORTER_OTLP_PROTOCOL=",
      "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=",
      "OTEL_EXPORTER_OTLP_TIMEOUT=",
      "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT=",
      "OTEL_EXPORTER_OTLP_COMPRESSION=",
      "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION=",
      "OTEL_EXPORTER_OTLP_HEADERS=",
      "OTEL_EXPORTER_OTLP_METRICS_HEADERS="};
  ChildProcess recorder(
      {gym::test::build_path("tests/support/gym_telemetry_recorder"), "--batches", "10"}, env,
      /*merge_stderr=*/true);
  RecorderRun run;
  const std::string rest = recorder.wait_for_line("{\"records\":", std::chrono::seconds(60));
  recorder.drain(std::chrono::seconds(10));
  run.exit_code = recorder.wait_exit(std::chrono::seconds(10));
  run.output = recorder.output();
  if (!rest.empty()) run.result = json::parse("{\"records\":" + rest).as_object();
  return run;
}

std::uint64_t u64(const json::value& v) { return v.to_number<std::uint64_t>(); }

TEST(OtlpHttps, ARecordingProcessExportsToAnHttpsCollectorTrustedThroughSslCertFile) {
  ASSERT_TRUE(pki().error.empty()) << pki().error;
  auto receiver = https_receiver(pki().key, pki().cert);
  ASSERT_TRUE(listening(*receiver));
  const int port = receiver->port();

  const RecorderRun run = run_recorder(port, pki().ca);
  ASSERT_FALSE(run.result.empty()) << run.output;
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.result.at("shutdown_ok"), json::value(true)) << run.output;
  const auto& otlp = run.result.at("otlp");
  EXPECT_GE(u64(otlp.at("batches_sent")), 1u) << run.output;
  EXPECT_EQ(u64(otlp.at("batches_dropped")), 0u) << run.output;
  EXPECT_EQ(run.output.find("telemetry: metrics export fail"), std::string::npos) << run.output;

  // Every batch decoded, and no more arrive; the last one (the shutdown flush) holds the final
  // cumulative count.
  const std::size_t sent = u64(otlp.at("batches_sent"));
  EXPECT_TRUE(receiver->wait_for(sent, std::chrono::seconds(30))) << receiver->output();
  EXPECT_FALSE(receiver->wait_for(sent + 1, std::chrono::seconds(2))) << receiver->output();
  std::vector<json::value> decoded;
  std::set<std::int64_t> connections;
  for (const OtlpRequest& r : receiver->requests()) {
    connections.insert(r.headers.at("connection").as_int64());
    ASSERT_TRUE(r.error.empty()) << r.error << "\n" << receiver->output();
    EXPECT_EQ(r.content_type, "application/x-protobuf");
    EXPECT_EQ(r.encoding, "identity");
    decoded.push_back(r.decoded);
  }
  ASSERT_EQ(decoded.size(), sent) << receiver->output();
  EXPECT_EQ(connections.size(), 1u) << "the exporter keeps its TLS connection alive";
  const json::value& last = decoded.back();
  const auto res = attributes(last.at("resourceMetrics").at(0).at("resource").at("attributes"));
  EXPECT_EQ(str(res.at("service.name").at("stringValue")), "nemo-gym/telemetry_recorder");
  const auto& records = metric(last, "test.recorder.records");
  std::uint64_t total = 0;
  for (const auto& p : records.at("sum").at("dataPoints").as_array()) {
    total += std::stoull(str(p.at("asInt")));
  }
  EXPECT_EQ(total, u64(run.result.at("expected_records")));
  const auto& histogram = metric(last, "test.recorder.duration_ms");
  std::uint64_t count = 0;
  for (const auto& p : histogram.at("histogram").at("dataPoints").as_array()) {
    count += std::stoull(str(p.at("count")));
  }
  EXPECT_EQ(count, u64(run.result.at("expected_records")));
  EXPECT_EQ(receiver->output().find("ERROR"), std::string::npos) << receiver->output();
  receiver->stop();
}

TEST(OtlpHttps, AnUntrustedCollectorCertificateDropsBatchesWithoutRetryAndTheProcessExits) {
  ASSERT_TRUE(pki().error.empty()) << pki().error;
  auto receiver = https_receiver(pki().key, pki().cert);
  ASSERT_TRUE(listening(*receiver));
  const int port = receiver->port();

  const auto start = std::chrono::steady_clock::now();
  const RecorderRun run = run_recorder(port, pki().other_ca);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[untrusted recorder] wall " << wall << " s\n" << run.output;
  ASSERT_FALSE(run.result.empty()) << run.output;
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // D5: the shutdown is bounded to 5 s; a refused handshake fails at once, far below that.
  EXPECT_LT(run.result.at("shutdown_seconds").to_number<double>(), 5.5) << run.output;
  const auto& otlp = run.result.at("otlp");
  EXPECT_EQ(u64(otlp.at("batches_sent")), 0u) << run.output;
  EXPECT_GE(u64(otlp.at("batches_dropped")), 1u) << run.output;
  EXPECT_GE(u64(run.result.at("failures")), 1u) << run.output;
  EXPECT_EQ(u64(otlp.at("retries")), 0u) << "a refused handshake is not retried\n" << run.output;
  // The first failure is logged at once, naming the collector and OpenSSL's reason.
  EXPECT_NE(run.output.find("telemetry: metrics export failed"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(fmt::format("TLS handshake with localhost:{} failed", port)),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("unable to get local issuer certificate"), std::string::npos)
      << run.output;
  EXPECT_EQ(receiver->output().find("DECODED"), std::string::npos) << receiver->output();
  receiver->stop();
}

}  // namespace
