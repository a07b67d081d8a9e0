// OTLP decode by the OpenTelemetry project's own code (issue 5): a Node receiver built on
// @opentelemetry/otlp-transformer@0.214.0's generated protobuf root decodes what our
// OtlpMetricExporter sends over http/protobuf and http/json, plain and gzip, and every decoded
// field is checked against the values recorded here.
//
// The same over OTLP/gRPC (OtlpGrpc.*, issue 14): tests/integration/otlp_decode/grpc_receiver.js
// serves the three OTLP collector services with @grpc/grpc-js and decodes with the same root,
// plain and over TLS; metrics from this process and from a gym_telemetry_recorder child, and
// traces and logs built from our own trace.proto and logs.proto subsets (so every field number of
// those is checked by the OpenTelemetry decoder), over gRPC and over OTLP/HTTP.
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

#include "exporters/otlp/otlp_encoding.h"
#include "exporters/otlp/otlp_metric_exporter.h"
#include "exporters/otlp/otlp_sender.h"
#include "exporters/otlp/otlp_settings.h"
#include "http/client.h"
#include "otlp_receiver.h"
#include "process.h"
#include "telemetry/metrics/meter_provider.h"
#include "telemetry/resource.h"
#include "telemetry_recorder.h"
#include "test_pki.h"

#include "opentelemetry/proto/collector/logs/v1/logs_service.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"

namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace gym::telemetry;
using gym::exporters::Compression;
using gym::exporters::OtlpMetricExporter;
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
    OtlpMetricExporter exporter(s);
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

// A recorder exporting to `endpoint` over `protocol`; `extra` variables come last (and win).
RecorderRun run_recorder(const std::string& endpoint, const std::string& protocol,
                         const std::string& ca_file, const std::vector<std::string>& extra = {}) {
  // Telemetry from the environment as in a real process, with the CA to trust. One periodic
  // export during the ~2 s of recording and the shutdown flush, both over the same connection;
  // an export's budget is its interval, and 1.5 s leaves a loaded machine room for the first
  // one's TLS handshake (500 ms did not, now and then).
  auto env = gym::test::collector_env(endpoint, protocol, 1500);
  env.push_back("SSL_CERT_FILE=" + ca_file);
  env.insert(env.end(), extra.begin(), extra.end());
  ChildProcess recorder(
      {gym::test::build_path("tests/support/gym_telemetry_recorder"), "--batches", "40"}, env,
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

  const RecorderRun run =
      run_recorder(fmt::format("https://localhost:{}", port), "http/protobuf", pki().ca);
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
  const RecorderRun run =
      run_recorder(fmt::format("https://localhost:{}", port), "http/protobuf", pki().other_ca);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[untrusted recorder] wall " << wall << " s\n" << run.output;
  ASSERT_FALSE(run.result.empty()) << run.output;
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // The shutdown is bounded to 5 s; a refused handshake fails at once, far below that.
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

// ---- OTLP/gRPC (issue 14)
// ------------------------------------------------------------------------

using gym::exporters::OtlpSender;
using gym::exporters::Signal;
namespace collector = opentelemetry::proto::collector;
namespace otlp = opentelemetry::proto;

std::uint64_t points(const MetricsSnapshot& snapshot) {
  std::uint64_t n = 0;
  for (const auto& m : snapshot.metrics) {
    n += m.type() == MetricType::histogram ? m.histogram_points().size() : m.number_points().size();
  }
  return n;
}

std::unique_ptr<OtlpReceiver> grpc_receiver(OtlpReceiver::Options options = {}) {
  options.transport = OtlpReceiver::Transport::grpc;
  return std::make_unique<OtlpReceiver>(std::move(options));
}

std::unique_ptr<OtlpReceiver> grpc_tls_receiver(const std::string& key, const std::string& cert) {
  OtlpReceiver::Options options;
  options.tls = OtlpReceiver::Tls{key, cert};
  return grpc_receiver(std::move(options));
}

OtlpSettings grpc_settings(const std::string& endpoint) {
  OtlpSettings s;
  s.protocol = OtlpProtocol::grpc;
  s.url = endpoint;
  s.timeout = std::chrono::seconds(10);
  return s;
}

std::string header(const OtlpRequest& r, std::string_view key) {
  const auto* v = r.headers.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::int64_t grpc_status(const OtlpRequest& r) {
  const auto* v = r.headers.if_contains("grpc-status");
  return v && v->is_int64() ? v->as_int64() : -1;
}

constexpr std::string_view kMetricsMethod =
    "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";

// Exports `snapshot` to the gRPC receiver at `endpoint`, identity and gzip, each case twice over
// one exporter (one channel: the second call reuses its HTTP/2 connection), and checks what the
// receiver decoded and the metadata it saw.
void export_over_grpc(OtlpReceiver& receiver, const std::string& endpoint,
                      const MetricsSnapshot& snapshot) {
  std::size_t seen = receiver.size();
  for (Compression compression : {Compression::none, Compression::gzip}) {
    const std::string encoding = compression == Compression::gzip ? "gzip" : "identity";
    SCOPED_TRACE(endpoint + " " + encoding);
    OtlpSettings s = grpc_settings(endpoint);
    s.compression = compression;
    s.headers.emplace_back("X-Gym-Test", "otlp metadata");  // sent lowercased
    OtlpMetricExporter exporter(s);
    std::set<std::int64_t> connections;
    for (int round = 0; round < 2; ++round) {
      ASSERT_EQ(exporter.export_metrics(
                    snapshot, std::chrono::steady_clock::now() + std::chrono::seconds(20)),
                ExportResult::success)
          << receiver.output();
      ASSERT_TRUE(receiver.wait_for(seen + 1, std::chrono::seconds(30))) << receiver.output();
      const OtlpRequest r = receiver.requests().at(seen++);
      ASSERT_TRUE(r.error.empty()) << r.error << "\n" << receiver.output();
      EXPECT_EQ(r.path(), kMetricsMethod);
      EXPECT_EQ(r.content_type, "application/grpc");
      EXPECT_EQ(r.encoding, encoding);
      EXPECT_EQ(grpc_status(r), 0);
      // gRPC puts its own product token after the primary user agent.
      EXPECT_EQ(header(r, "user-agent").rfind("gym-cpp/" GYM_VERSION " ", 0), 0u)
          << header(r, "user-agent");
      EXPECT_EQ(header(r, "x-gym-test"), "otlp metadata");
      connections.insert(r.headers.at("connection").as_int64());
      check_request(r.decoded, snapshot);
    }
    EXPECT_EQ(connections.size(), 1u) << "one channel keeps its connection";
    const auto stats = exporter.stats();
    EXPECT_EQ(stats.batches_sent, 2u);
    EXPECT_EQ(stats.batches_dropped, 0u);
    EXPECT_EQ(stats.retries, 0u);
  }
  EXPECT_EQ(receiver.output().find("ERROR"), std::string::npos) << receiver.output();
  EXPECT_EQ(receiver.output().find("HANDSHAKE_FAILED"), std::string::npos) << receiver.output();
}

TEST(OtlpGrpc, TheOpenTelemetryDecoderReadsEveryFieldOverGrpc) {
  auto receiver = grpc_receiver();
  ASSERT_TRUE(listening(*receiver));
  EXPECT_EQ(receiver->protocol(), "grpc");
  const auto recorded = record_snapshot();
  export_over_grpc(*receiver, receiver->endpoint(), recorded->snapshot);
  // The gRPC form of an endpoint without a scheme, made plaintext by INSECURE=true.
  OtlpSettings s = grpc_settings(fmt::format("127.0.0.1:{}", receiver->port()));
  s.insecure = true;
  OtlpMetricExporter exporter(s);
  EXPECT_EQ(exporter.export_metrics(recorded->snapshot,
                                    std::chrono::steady_clock::now() + std::chrono::seconds(20)),
            ExportResult::success)
      << receiver->output();
  receiver->stop();
}

TEST(OtlpGrpc, HeadersGrpcMetadataCannotCarryAreLeftOutOfSettingsMadeByHand) {
  // resolve_otlp refuses them at startup; a sender given them directly must not abort the call.
  auto receiver = grpc_receiver();
  ASSERT_TRUE(listening(*receiver));
  OtlpSettings s = grpc_settings(receiver->endpoint());
  s.headers = {{"bad key", "1"}, {"x-gym-test", "kept"}, {"x-newline", "a\nb"}};
  OtlpSender sender(s, Signal::metrics);
  const auto recorded = record_snapshot();
  ASSERT_TRUE(sender.send(gym::exporters::encode_request(recorded->snapshot, OtlpProtocol::grpc),
                          points(recorded->snapshot),
                          std::chrono::steady_clock::now() + std::chrono::seconds(20)))
      << receiver->output();
  ASSERT_TRUE(receiver->wait_for(1, std::chrono::seconds(30))) << receiver->output();
  EXPECT_EQ(header(receiver->requests().at(0), "x-gym-test"), "kept");
  receiver->stop();
}

TEST(OtlpGrpc, TheOpenTelemetryDecoderReadsEveryFieldOverGrpcWithTls) {
  ASSERT_TRUE(pki().error.empty()) << pki().error;
  auto receiver = grpc_tls_receiver(pki().key, pki().cert);
  ASSERT_TRUE(listening(*receiver));
  const int port = receiver->port();
  TrustStore trust(pki().ca);
  const auto recorded = record_snapshot();
  // By host name and by IP address (the certificate names both).
  export_over_grpc(*receiver, fmt::format("https://localhost:{}", port), recorded->snapshot);
  export_over_grpc(*receiver, receiver->endpoint(), recorded->snapshot);
  // Without a scheme, TLS unless INSECURE says otherwise (its default is false); and http:// with
  // INSECURE=false is TLS too, as upstream's SDK decides.
  for (auto [endpoint, insecure] : std::vector<std::pair<std::string, std::optional<bool>>>{
           {fmt::format("localhost:{}", port), std::nullopt},
           {fmt::format("http://localhost:{}", port), false}}) {
    SCOPED_TRACE(endpoint);
    OtlpSettings s = grpc_settings(endpoint);
    s.insecure = insecure;
    OtlpMetricExporter exporter(s);
    EXPECT_EQ(exporter.export_metrics(recorded->snapshot,
                                      std::chrono::steady_clock::now() + std::chrono::seconds(20)),
              ExportResult::success)
        << receiver->output();
  }
  receiver->stop();
}

TEST(OtlpGrpc, AnUntrustedOrWrongHostCertificateDropsTheBatchWithoutRetry) {
  ASSERT_TRUE(pki().error.empty()) << pki().error;
  auto receiver = grpc_tls_receiver(pki().key, pki().cert);
  ASSERT_TRUE(listening(*receiver));
  auto wrong = grpc_tls_receiver(pki().wrong_key, pki().wrong_cert);
  ASSERT_TRUE(listening(*wrong));
  const auto recorded = record_snapshot();
  struct Case {
    std::string name, ca, endpoint;
  };
  for (const Case& c : std::vector<Case>{
           {"untrusted", pki().other_ca, fmt::format("https://localhost:{}", receiver->port())},
           {"wrong host", pki().ca, fmt::format("https://localhost:{}", wrong->port())}}) {
    SCOPED_TRACE(c.name);
    TrustStore trust(c.ca);
    OtlpMetricExporter exporter(grpc_settings(c.endpoint));
    EXPECT_EQ(exporter.export_metrics(recorded->snapshot,
                                      std::chrono::steady_clock::now() + std::chrono::seconds(20)),
              ExportResult::failure);
    const auto stats = exporter.stats();
    EXPECT_EQ(stats.batches_dropped, 1u);
    EXPECT_EQ(stats.items_dropped, points(recorded->snapshot));
    EXPECT_EQ(stats.retries, 0u) << "a refused handshake is not retried";
  }
  EXPECT_EQ(receiver->output().find("DECODED"), std::string::npos) << receiver->output();
  EXPECT_EQ(wrong->output().find("DECODED"), std::string::npos) << wrong->output();
  receiver->stop();
  wrong->stop();
}

// ---- Traces and logs: our trace.proto and logs.proto subsets through the OpenTelemetry decoder --

const std::string kTraceId(reinterpret_cast<const char*>(
                               "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10"),
                           16);
const std::string kSpanId("\x11\x12\x13\x14\x15\x16\x17\x18", 8);
const std::string kParentSpanId("\x21\x22\x23\x24\x25\x26\x27\x28", 8);
// The same, as the decoder prints bytes (base64).
constexpr const char* kTraceIdBase64 = "AQIDBAUGBwgJCgsMDQ4PEA==";
constexpr const char* kSpanIdBase64 = "ERITFBUWFxg=";
constexpr const char* kParentSpanIdBase64 = "ISIjJCUmJyg=";

void set_attribute(otlp::common::v1::KeyValue* kv, const std::string& key, const std::string& v) {
  kv->set_key(key);
  kv->mutable_value()->set_string_value(v);
}

void fill_resource(otlp::resource::v1::Resource* resource) {
  set_attribute(resource->add_attributes(), "service.name", "nemo-gym/mcqa_simple_agent");
}

collector::trace::v1::ExportTraceServiceRequest trace_request() {
  collector::trace::v1::ExportTraceServiceRequest request;
  auto* rs = request.add_resource_spans();
  fill_resource(rs->mutable_resource());
  auto* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name("gym-cpp");
  ss->mutable_scope()->set_version(GYM_VERSION);
  auto* span = ss->add_spans();
  span->set_trace_id(kTraceId);
  span->set_span_id(kSpanId);
  span->set_trace_state("vendor=x");
  span->set_parent_span_id(kParentSpanId);
  span->set_flags(0x301);  // sampled; the parent is remote
  span->set_name("POST /run");
  span->set_kind(otlp::trace::v1::Span::SPAN_KIND_SERVER);
  span->set_start_time_unix_nano(1'700'000'000'123'456'789ull);
  span->set_end_time_unix_nano(1'700'000'001'987'654'321ull);
  set_attribute(span->add_attributes(), "nemo.gym.rollout.id", "r-7");
  auto* code = span->add_attributes();
  code->set_key("http.response.status_code");
  code->mutable_value()->set_int_value(200);
  span->set_dropped_attributes_count(2);
  auto* event = span->add_events();
  event->set_time_unix_nano(1'700'000'001'000'000'000ull);
  event->set_name("nemo.span.truncated");
  set_attribute(event->add_attributes(), "reason", "still open at telemetry shutdown");
  span->mutable_status()->set_code(otlp::trace::v1::Status::STATUS_CODE_ERROR);
  span->mutable_status()->set_message("verifier failed");
  return request;
}

collector::logs::v1::ExportLogsServiceRequest logs_request() {
  collector::logs::v1::ExportLogsServiceRequest request;
  auto* rl = request.add_resource_logs();
  fill_resource(rl->mutable_resource());
  auto* sl = rl->add_scope_logs();
  sl->mutable_scope()->set_name("gym-cpp");
  auto* record = sl->add_log_records();
  record->set_time_unix_nano(1'700'000'002'000'000'001ull);
  record->set_observed_time_unix_nano(1'700'000'002'000'000'002ull);
  record->set_severity_number(otlp::logs::v1::SEVERITY_NUMBER_WARN);
  record->set_severity_text("WARN");
  record->mutable_body()->set_string_value("model call retried");
  set_attribute(record->add_attributes(), "code.function", "call_model");
  record->set_flags(1);
  record->set_trace_id(kTraceId);
  record->set_span_id(kSpanId);
  return request;
}

void check_trace(const OtlpRequest& r) {
  ASSERT_TRUE(r.error.empty()) << r.error;
  const auto& rs = r.decoded.at("resourceSpans").at(0);
  EXPECT_EQ(str(attributes(rs.at("resource").at("attributes"))["service.name"].at("stringValue")),
            "nemo-gym/mcqa_simple_agent");
  const auto& ss = rs.at("scopeSpans").at(0);
  EXPECT_EQ(str(ss.at("scope").at("name")), "gym-cpp");
  EXPECT_EQ(str(ss.at("scope").at("version")), GYM_VERSION);
  const auto& span = ss.at("spans").at(0);
  EXPECT_EQ(str(span.at("traceId")), kTraceIdBase64);
  EXPECT_EQ(str(span.at("spanId")), kSpanIdBase64);
  EXPECT_EQ(str(span.at("traceState")), "vendor=x");
  EXPECT_EQ(str(span.at("parentSpanId")), kParentSpanIdBase64);
  EXPECT_EQ(span.at("flags").to_number<std::int64_t>(), 0x301);
  EXPECT_EQ(str(span.at("name")), "POST /run");
  EXPECT_EQ(span.at("kind").to_number<std::int64_t>(), 2);  // SERVER
  EXPECT_EQ(str(span.at("startTimeUnixNano")), "1700000000123456789");
  EXPECT_EQ(str(span.at("endTimeUnixNano")), "1700000001987654321");
  auto a = attributes(span.at("attributes"));
  EXPECT_EQ(str(a["nemo.gym.rollout.id"].at("stringValue")), "r-7");
  EXPECT_EQ(str(a["http.response.status_code"].at("intValue")), "200");
  EXPECT_EQ(span.at("droppedAttributesCount").to_number<std::int64_t>(), 2);
  const auto& event = span.at("events").at(0);
  EXPECT_EQ(str(event.at("timeUnixNano")), "1700000001000000000");
  EXPECT_EQ(str(event.at("name")), "nemo.span.truncated");
  EXPECT_EQ(str(attributes(event.at("attributes"))["reason"].at("stringValue")),
            "still open at telemetry shutdown");
  EXPECT_EQ(span.at("status").at("code").to_number<std::int64_t>(), 2);  // ERROR
  EXPECT_EQ(str(span.at("status").at("message")), "verifier failed");
}

void check_logs(const OtlpRequest& r) {
  ASSERT_TRUE(r.error.empty()) << r.error;
  const auto& rl = r.decoded.at("resourceLogs").at(0);
  EXPECT_EQ(str(attributes(rl.at("resource").at("attributes"))["service.name"].at("stringValue")),
            "nemo-gym/mcqa_simple_agent");
  const auto& sl = rl.at("scopeLogs").at(0);
  EXPECT_EQ(str(sl.at("scope").at("name")), "gym-cpp");
  const auto& record = sl.at("logRecords").at(0);
  EXPECT_EQ(str(record.at("timeUnixNano")), "1700000002000000001");
  EXPECT_EQ(str(record.at("observedTimeUnixNano")), "1700000002000000002");
  EXPECT_EQ(record.at("severityNumber").to_number<std::int64_t>(), 13);  // WARN
  EXPECT_EQ(str(record.at("severityText")), "WARN");
  EXPECT_EQ(str(record.at("body").at("stringValue")), "model call retried");
  EXPECT_EQ(str(attributes(record.at("attributes"))["code.function"].at("stringValue")),
            "call_model");
  EXPECT_EQ(record.at("flags").to_number<std::int64_t>(), 1);
  EXPECT_EQ(str(record.at("traceId")), kTraceIdBase64);
  EXPECT_EQ(str(record.at("spanId")), kSpanIdBase64);
}

// Sends one trace batch and one log batch through OtlpSenders with `settings` (protobuf payloads)
// and checks what `receiver` decoded, and the path each arrived on.
void send_traces_and_logs(OtlpReceiver& receiver, OtlpSettings settings,
                          const std::string& traces_path, const std::string& logs_path) {
  const auto deadline = [] { return std::chrono::steady_clock::now() + std::chrono::seconds(20); };
  std::size_t seen = receiver.size();
  {
    OtlpSender sender(settings, Signal::traces);
    EXPECT_EQ(sender.signal(), Signal::traces);
    ASSERT_TRUE(sender.send(trace_request().SerializeAsString(), 1, deadline()))
        << receiver.output();
    ASSERT_TRUE(receiver.wait_for(seen + 1, std::chrono::seconds(30))) << receiver.output();
    const OtlpRequest r = receiver.requests().at(seen++);
    EXPECT_EQ(r.path(), traces_path);
    check_trace(r);
    EXPECT_EQ(sender.stats().batches_sent, 1u);
  }
  {
    // An HTTP URL is the signal's own (resolve_otlp appends /v1/<signal>).
    if (settings.url.ends_with("/v1/traces")) {
      settings.url.replace(settings.url.size() - 10, 10, "/v1/logs");
    }
    OtlpSender sender(settings, Signal::logs);
    ASSERT_TRUE(sender.send(logs_request().SerializeAsString(), 1, deadline()))
        << receiver.output();
    ASSERT_TRUE(receiver.wait_for(seen + 1, std::chrono::seconds(30))) << receiver.output();
    const OtlpRequest r = receiver.requests().at(seen++);
    EXPECT_EQ(r.path(), logs_path);
    check_logs(r);
  }
  EXPECT_EQ(receiver.output().find("ERROR"), std::string::npos) << receiver.output();
}

TEST(OtlpGrpc, TracesAndLogsDecodeWithOtlpsFieldNumbersOverGrpc) {
  auto receiver = grpc_receiver();
  ASSERT_TRUE(listening(*receiver));
  OtlpSettings s = grpc_settings(receiver->endpoint());
  send_traces_and_logs(*receiver, s, "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                       "/opentelemetry.proto.collector.logs.v1.LogsService/Export");
  s.compression = Compression::gzip;
  send_traces_and_logs(*receiver, s, "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                       "/opentelemetry.proto.collector.logs.v1.LogsService/Export");
  receiver->stop();
}

TEST(OtlpGrpc, TracesAndLogsDecodeOverHttpProtobufToo) {
  OtlpReceiver receiver;
  ASSERT_TRUE(listening(receiver));
  OtlpSettings s;
  s.protocol = OtlpProtocol::http_protobuf;
  s.url = receiver.endpoint() + "/v1/traces";
  send_traces_and_logs(receiver, s, "/v1/traces", "/v1/logs");
  s.compression = Compression::gzip;
  send_traces_and_logs(receiver, s, "/v1/traces", "/v1/logs");
  receiver.stop();
}

// TLS is the sender's, shared by the three signals; spans and log records cross it too.
TEST(OtlpGrpc, TracesAndLogsDecodeOverGrpcWithTlsAndOverHttps) {
  ASSERT_TRUE(pki().error.empty()) << pki().error;
  TrustStore trust(pki().ca);
  {
    auto receiver = grpc_tls_receiver(pki().key, pki().cert);
    ASSERT_TRUE(listening(*receiver));
    send_traces_and_logs(*receiver,
                         grpc_settings(fmt::format("https://localhost:{}", receiver->port())),
                         "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                         "/opentelemetry.proto.collector.logs.v1.LogsService/Export");
    EXPECT_EQ(receiver->output().find("HANDSHAKE_FAILED"), std::string::npos) << receiver->output();
    receiver->stop();
  }
  {
    auto receiver = https_receiver(pki().key, pki().cert);
    ASSERT_TRUE(listening(*receiver));
    OtlpSettings s;
    s.protocol = OtlpProtocol::http_protobuf;
    s.url = fmt::format("https://localhost:{}/v1/traces", receiver->port());
    send_traces_and_logs(*receiver, s, "/v1/traces", "/v1/logs");
    receiver->stop();
  }
}

// OTEL_EXPORTER_OTLP_CERTIFICATE trusts a private CA with no help from SSL_CERT_FILE, and
// OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE / _CLIENT_KEY present this process to a collector that
// demands a client certificate (mutual TLS), over https and over gRPC alike: the settings are
// resolved from the variables as a process resolves them.
TEST(OtlpTlsFiles, CertificateAndClientCertificateOverHttpsAndGrpc) {
  ASSERT_TRUE(pki().error.empty()) << pki().error;
  // The system trust store only (a machine may point SSL_CERT_FILE elsewhere): restored below.
  const char* set = std::getenv("SSL_CERT_FILE");
  const std::optional<std::string> old_cert_file =
      set ? std::optional<std::string>(set) : std::nullopt;
  ::unsetenv("SSL_CERT_FILE");
  struct Restore {
    const std::optional<std::string>& value;
    ~Restore() {
      if (value) ::setenv("SSL_CERT_FILE", value->c_str(), 1);
    }
  } restore{old_cert_file};
  for (auto transport : {OtlpReceiver::Transport::http, OtlpReceiver::Transport::grpc}) {
    const bool grpc = transport == OtlpReceiver::Transport::grpc;
    SCOPED_TRACE(grpc ? "grpc" : "http/protobuf");
    OtlpReceiver::Options options;
    options.transport = transport;
    options.tls = OtlpReceiver::Tls{pki().key, pki().cert, pki().ca};
    OtlpReceiver receiver(options);
    ASSERT_TRUE(listening(receiver));
    auto send = [&](std::map<std::string, std::string> vars) {
      vars["OTEL_EXPORTER_OTLP_PROTOCOL"] = grpc ? "grpc" : "http/protobuf";
      vars["OTEL_EXPORTER_OTLP_ENDPOINT"] = fmt::format("https://localhost:{}", receiver.port());
      const GetEnv getenv = [&](const std::string& name) -> std::optional<std::string> {
        auto it = vars.find(name);
        return it == vars.end() ? std::nullopt : std::optional(it->second);
      };
      const OtlpSettings settings =
          gym::exporters::resolve_otlp(TelemetrySettings{}, getenv, Signal::traces);
      OtlpSender sender(settings, Signal::traces);
      return sender.send(trace_request().SerializeAsString(), 1,
                         std::chrono::steady_clock::now() + std::chrono::seconds(3));
    };
    const std::map<std::string, std::string> trusted{
        {"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", pki().ca},
        {"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", pki().client_cert},
        {"OTEL_EXPORTER_OTLP_CLIENT_KEY", pki().client_key}};
    ASSERT_TRUE(send(trusted)) << receiver.output();
    ASSERT_TRUE(receiver.wait_for(1, std::chrono::seconds(30))) << receiver.output();
    const OtlpRequest r = receiver.requests().at(0);
    check_trace(r);
    EXPECT_EQ(header(r, "x-client-cert-cn"), "gym-test-client");

    // What the collector refuses: no client certificate, one another CA signed; and what this
    // process refuses: a collector whose CA it was not told to trust.
    auto without_client = trusted;
    without_client.erase("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE");
    without_client.erase("OTEL_EXPORTER_OTLP_CLIENT_KEY");
    EXPECT_FALSE(send(without_client));
    auto other_client = trusted;
    other_client["OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"] = pki().other_client_cert;
    other_client["OTEL_EXPORTER_OTLP_CLIENT_KEY"] = pki().other_client_key;
    EXPECT_FALSE(send(other_client));
    auto untrusted = trusted;
    untrusted.erase("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE");
    EXPECT_FALSE(send(untrusted));
    EXPECT_EQ(receiver.size(), 1u) << receiver.output();
    receiver.stop();
  }
}

TEST(OtlpGrpc, PartialSuccessIsCountedAndLoggedForEverySignal) {
  OtlpReceiver::Options options;
  options.partial_success = {{3, "too old"}};
  auto receiver = grpc_receiver(options);
  ASSERT_TRUE(listening(*receiver));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  const auto recorded = record_snapshot();
  OtlpMetricExporter metrics(grpc_settings(receiver->endpoint()));
  EXPECT_EQ(metrics.export_metrics(recorded->snapshot, deadline), ExportResult::success);
  EXPECT_EQ(metrics.stats().items_rejected, 3u);
  OtlpSender traces(grpc_settings(receiver->endpoint()), Signal::traces);
  EXPECT_TRUE(traces.send(trace_request().SerializeAsString(), 1, deadline));
  EXPECT_EQ(traces.stats().items_rejected, 3u);
  OtlpSender logs(grpc_settings(receiver->endpoint()), Signal::logs);
  EXPECT_TRUE(logs.send(logs_request().SerializeAsString(), 1, deadline));
  EXPECT_EQ(logs.stats().items_rejected, 3u);
  EXPECT_EQ(logs.stats().batches_sent, 1u);
  receiver->stop();
}

// ---- Retries over gRPC, in process: the fault tests run them in a recording process -------------

TEST(OtlpGrpc, UnavailableAndResourceExhaustedAreRetriedThenSucceed) {
  for (int code : {14, 8}) {
    SCOPED_TRACE(code);
    OtlpReceiver::Options options;
    options.fail_calls = 2;
    options.fail_code = code;
    auto receiver = grpc_receiver(options);
    ASSERT_TRUE(listening(*receiver));
    const auto recorded = record_snapshot();
    OtlpMetricExporter exporter(grpc_settings(receiver->endpoint()));  // 10 s: room for 1 s + 2 s
    EXPECT_EQ(exporter.export_metrics(recorded->snapshot,
                                      std::chrono::steady_clock::now() + std::chrono::seconds(20)),
              ExportResult::success)
        << receiver->output();
    const auto stats = exporter.stats();
    EXPECT_EQ(stats.retries, 2u);
    EXPECT_EQ(stats.batches_sent, 1u);
    EXPECT_EQ(stats.batches_dropped, 0u);
    ASSERT_TRUE(receiver->wait_for(3, std::chrono::seconds(30))) << receiver->output();
    const auto requests = receiver->requests();
    ASSERT_EQ(requests.size(), 3u);
    EXPECT_EQ(grpc_status(requests[0]), code);
    EXPECT_EQ(grpc_status(requests[1]), code);
    EXPECT_EQ(grpc_status(requests[2]), 0);
    for (const auto& r : requests) check_request(r.decoded, recorded->snapshot);  // the same batch
    receiver->stop();
  }
}

TEST(OtlpGrpc, OtherStatusesDropTheBatchAtOnce) {
  for (int code : {7 /* PERMISSION_DENIED */, 3 /* INVALID_ARGUMENT */, 13 /* INTERNAL */}) {
    SCOPED_TRACE(code);
    OtlpReceiver::Options options;
    options.fail_calls = 1;
    options.fail_code = code;
    auto receiver = grpc_receiver(options);
    ASSERT_TRUE(listening(*receiver));
    const auto recorded = record_snapshot();
    OtlpMetricExporter exporter(grpc_settings(receiver->endpoint()));
    EXPECT_EQ(exporter.export_metrics(recorded->snapshot,
                                      std::chrono::steady_clock::now() + std::chrono::seconds(20)),
              ExportResult::failure);
    EXPECT_EQ(exporter.stats().retries, 0u);
    EXPECT_EQ(exporter.stats().batches_dropped, 1u);
    // The next export is independent.
    EXPECT_EQ(exporter.export_metrics(recorded->snapshot,
                                      std::chrono::steady_clock::now() + std::chrono::seconds(20)),
              ExportResult::success);
    ASSERT_TRUE(receiver->wait_for(2, std::chrono::seconds(30))) << receiver->output();
    EXPECT_EQ(receiver->requests().size(), 2u);
    receiver->stop();
  }
}

// ---- A recording process (gym_telemetry_recorder) over gRPC
// --------------------------------------

// The last export's data points of `name`, keyed by their attributes, as comparable JSON: the
// cumulative values a run ends with.
std::map<std::string, std::string> final_points(const OtlpReceiver& receiver,
                                                std::string_view name) {
  std::map<std::string, std::string> out;
  const auto requests = gym::test::exports_only(receiver.requests());
  if (requests.empty()) return out;
  const json::value& last = requests.back().decoded;
  const auto& m = metric(last, name);
  const std::string kind = m.contains("histogram") ? "histogram" : "sum";
  for (const auto& p : m.at(kind).at("dataPoints").as_array()) {
    json::object point = p.as_object();
    const std::string key = json::serialize(point.at("attributes"));
    point.erase("attributes");
    point.erase("startTimeUnixNano");
    point.erase("timeUnixNano");
    out[key] = json::serialize(point);
  }
  return out;
}

std::uint64_t final_total(const OtlpReceiver& receiver, std::string_view name) {
  std::uint64_t total = 0;
  const auto requests = gym::test::exports_only(receiver.requests());
  if (requests.empty()) return 0;
  const auto& m = metric(requests.back().decoded, name);
  const bool histogram = m.contains("histogram");
  for (const auto& p : m.at(histogram ? "histogram" : "sum").at("dataPoints").as_array()) {
    total += std::stoull(str(p.at(histogram ? "count" : "asInt")));
  }
  return total;
}

// Runs the recorder against `receiver` and checks it delivered every batch, undisturbed.
RecorderRun record_to(OtlpReceiver& receiver, const std::string& endpoint,
                      const std::string& ca_file, const std::vector<std::string>& extra = {}) {
  RecorderRun run = run_recorder(endpoint, receiver.protocol(), ca_file, extra);
  EXPECT_FALSE(run.result.empty()) << run.output;
  if (run.result.empty()) return run;
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.result.at("shutdown_ok"), json::value(true)) << run.output;
  const auto& otlp = run.result.at("otlp");
  const std::size_t sent = u64(otlp.at("batches_sent"));
  EXPECT_GE(sent, 1u) << run.output;
  EXPECT_EQ(u64(otlp.at("batches_dropped")), 0u) << run.output;
  EXPECT_EQ(u64(otlp.at("retries")), 0u) << run.output;
  EXPECT_EQ(run.output.find("telemetry: metrics export fail"), std::string::npos) << run.output;
  EXPECT_TRUE(receiver.wait_for(sent, std::chrono::seconds(30))) << receiver.output();
  return run;
}

TEST(OtlpGrpcProcess, ARecordingProcessExportsOverGrpcWithTheValuesItExportsOverHttp) {
  auto grpc = grpc_receiver();
  ASSERT_TRUE(listening(*grpc));
  OtlpReceiver http;
  ASSERT_TRUE(listening(http));

  // Over gRPC, with headers from the environment as metadata.
  const RecorderRun over_grpc =
      record_to(*grpc, grpc->endpoint(), "", {"OTEL_EXPORTER_OTLP_HEADERS=x-gym-test=from%20env"});
  ASSERT_FALSE(over_grpc.result.empty());
  const RecorderRun over_http = record_to(http, http.endpoint(), "");
  ASSERT_FALSE(over_http.result.empty());
  ASSERT_TRUE(grpc->sync()) << grpc->output();
  ASSERT_TRUE(http.sync()) << http.output();

  const auto requests = gym::test::exports_only(grpc->requests());
  ASSERT_EQ(requests.size(), u64(over_grpc.result.at("otlp").at("batches_sent")));
  std::set<std::int64_t> connections;
  for (const OtlpRequest& r : requests) {
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.path(), kMetricsMethod);
    EXPECT_EQ(r.content_type, "application/grpc");
    EXPECT_EQ(r.encoding, "identity");
    EXPECT_EQ(header(r, "x-gym-test"), "from env");
    connections.insert(r.headers.at("connection").as_int64());
  }
  EXPECT_EQ(connections.size(), 1u) << "the process keeps one gRPC connection";
  const auto& last = requests.back().decoded;
  const auto res = attributes(last.at("resourceMetrics").at(0).at("resource").at("attributes"));
  EXPECT_EQ(str(res.at("service.name").at("stringValue")), "nemo-gym/telemetry_recorder");

  // The same cumulative values at the end of both runs: every record made, point for point.
  const std::uint64_t expected = u64(over_grpc.result.at("expected_records"));
  EXPECT_EQ(final_total(*grpc, "test.recorder.records"), expected);
  EXPECT_EQ(final_total(*grpc, "test.recorder.duration_ms"), expected);
  EXPECT_EQ(final_total(http, "test.recorder.records"), expected);
  for (std::string_view name : {"test.recorder.records", "test.recorder.duration_ms"}) {
    SCOPED_TRACE(std::string(name));
    const auto grpc_points = final_points(*grpc, name);
    EXPECT_EQ(grpc_points.size(), 12u);  // 2 outcomes x 3 constraints x 2 threads
    EXPECT_EQ(grpc_points, final_points(http, name));
  }
  grpc->stop();
  http.stop();
}

TEST(OtlpGrpcProcess, GzipCompressesTheCalls) {
  auto receiver = grpc_receiver();
  ASSERT_TRUE(listening(*receiver));
  const RecorderRun run = record_to(*receiver, receiver->endpoint(), "",
                                    {"OTEL_EXPORTER_OTLP_METRICS_COMPRESSION=gzip"});
  ASSERT_FALSE(run.result.empty());
  ASSERT_TRUE(receiver->sync()) << receiver->output();
  const auto requests = gym::test::exports_only(receiver->requests());
  ASSERT_FALSE(requests.empty());
  for (const OtlpRequest& r : requests) {
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.encoding, "gzip");
  }
  EXPECT_EQ(final_total(*receiver, "test.recorder.records"),
            u64(run.result.at("expected_records")));
  receiver->stop();
}

TEST(OtlpGrpcProcess, ARecordingProcessExportsToATlsCollectorTrustedThroughSslCertFile) {
  ASSERT_TRUE(pki().error.empty()) << pki().error;
  auto receiver = grpc_tls_receiver(pki().key, pki().cert);
  ASSERT_TRUE(listening(*receiver));
  const RecorderRun run =
      record_to(*receiver, fmt::format("https://localhost:{}", receiver->port()), pki().ca);
  ASSERT_FALSE(run.result.empty());
  EXPECT_FALSE(receiver->wait_for(u64(run.result.at("otlp").at("batches_sent")) + 1,
                                  std::chrono::seconds(2)))
      << "no more batches than the recorder sent\n"
      << receiver->output();
  std::set<std::int64_t> connections;
  for (const OtlpRequest& r : receiver->requests()) {
    ASSERT_TRUE(r.error.empty()) << r.error;
    connections.insert(r.headers.at("connection").as_int64());
  }
  EXPECT_EQ(connections.size(), 1u) << "the exporter keeps its TLS connection";
  EXPECT_EQ(final_total(*receiver, "test.recorder.records"),
            u64(run.result.at("expected_records")));
  EXPECT_EQ(final_total(*receiver, "test.recorder.duration_ms"),
            u64(run.result.at("expected_records")));
  EXPECT_EQ(receiver->output().find("HANDSHAKE_FAILED"), std::string::npos) << receiver->output();
  receiver->stop();
}

}  // namespace
