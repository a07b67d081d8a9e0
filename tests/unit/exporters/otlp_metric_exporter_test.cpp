// The OTLP metrics exporter over OTLP/HTTP against a real HTTP receiver on 127.0.0.1 (gym_http's
// server), and against a port nobody listens on and a listener that never answers. (Over gRPC:
// tests/integration/otlp_decode_test.cpp, against the OpenTelemetry JS gRPC receiver.)
#include "exporters/otlp/otlp_metric_exporter.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <mutex>
#include <thread>

#include <google/protobuf/util/json_util.h>
#include <boost/asio/io_context.hpp>

#include "exporters/otlp/gzip.h"
#include "exporters/otlp/otlp_encoding.h"
#include "http/server.h"
#include "reserved_port.h"
#include "telemetry/metrics/meter_provider.h"

namespace gym::exporters {
namespace {

using namespace std::chrono_literals;
using telemetry::ExportResult;
using Clock = std::chrono::steady_clock;

struct Received {
  std::string content_type;
  std::string content_encoding;
  std::string user_agent;
  std::string custom_header;
  std::string body;
};

// An OTLP receiver: answers POST /v1/metrics with the queued statuses (then 200).
class Receiver {
 public:
  Receiver() {
    http::Router router;
    router.post("/v1/metrics",
                [this](http::Request& req) -> boost::asio::awaitable<http::Response> {
                  http::Response res;
                  std::lock_guard lock(mutex_);
                  received_.push_back({std::string(req.header("content-type")),
                                       std::string(req.header("content-encoding")),
                                       std::string(req.header("user-agent")),
                                       std::string(req.header("x-api-key")), req.body});
                  if (!statuses_.empty()) {
                    res.status = statuses_.front();
                    statuses_.pop_front();
                    if (res.status != 200) res.headers.push_back({"Retry-After", "0"});
                  }
                  res.body = next_body_;
                  res.content_type = "application/x-protobuf";
                  co_return res;
                });
    http::ServerOptions options;
    server_ = std::make_unique<http::HttpServer>(std::move(router), options);
    port_ = server_->bind();
    server_->start(io_);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Receiver() {
    server_->stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1/metrics"; }
  void queue(std::initializer_list<int> statuses) {
    std::lock_guard lock(mutex_);
    statuses_.insert(statuses_.end(), statuses);
  }
  void reply_body(std::string body) {
    std::lock_guard lock(mutex_);
    next_body_ = std::move(body);
  }
  std::vector<Received> received() {
    std::lock_guard lock(mutex_);
    return received_;
  }

 private:
  boost::asio::io_context io_;
  std::unique_ptr<http::HttpServer> server_;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::deque<int> statuses_;
  std::string next_body_;
  std::vector<Received> received_;
};

telemetry::MetricsSnapshot snapshot() {
  static telemetry::MeterProvider provider;
  static bool once = [] {
    provider.create_counter<std::int64_t>("t.requests", "{request}").add(7, {{"k", "v"}});
    provider.create_histogram("t.duration", "ms", "", {1, 10}).record(5);
    return true;
  }();
  (void)once;
  return provider.collect();
}

OtlpSettings settings_for(const std::string& url) {
  OtlpSettings s;
  s.protocol = OtlpProtocol::http_protobuf;
  s.url = url;
  s.timeout = 5000ms;
  return s;
}

ExportMetricsServiceRequest decode_protobuf(const std::string& body) {
  ExportMetricsServiceRequest r;
  EXPECT_TRUE(r.ParseFromString(body));
  return r;
}

TEST(OtlpMetricExporter, SendsProtobufWithHeaders) {
  Receiver receiver;
  auto s = settings_for(receiver.url());
  s.headers = {{"x-api-key", "secret value"}};
  OtlpMetricExporter exporter(s);
  auto snap = snapshot();
  EXPECT_EQ(exporter.export_metrics(snap, telemetry::Deadline::max()), ExportResult::success);
  auto got = receiver.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].content_type, "application/x-protobuf");
  EXPECT_EQ(got[0].content_encoding, "");
  EXPECT_EQ(got[0].user_agent, "gym-cpp/" GYM_VERSION);
  EXPECT_EQ(got[0].custom_header, "secret value");
  auto r = decode_protobuf(got[0].body);
  ASSERT_EQ(r.resource_metrics(0).scope_metrics(0).metrics_size(), 2);
  EXPECT_EQ(r.resource_metrics(0).scope_metrics(0).metrics(0).sum().data_points(0).as_int(), 7);
  EXPECT_EQ(exporter.stats().batches_sent, 1u);
}

TEST(OtlpMetricExporter, SendsJsonAndGzip) {
  Receiver receiver;
  auto s = settings_for(receiver.url());
  s.protocol = OtlpProtocol::http_json;
  s.compression = Compression::gzip;
  OtlpMetricExporter exporter(s);
  auto snap = snapshot();
  EXPECT_EQ(exporter.export_metrics(snap, telemetry::Deadline::max()), ExportResult::success);
  auto got = receiver.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].content_type, "application/json");
  EXPECT_EQ(got[0].content_encoding, "gzip");
  ExportMetricsServiceRequest r;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(gunzip(got[0].body), &r).ok());
  EXPECT_EQ(r.resource_metrics(0).scope_metrics(0).metrics(1).histogram().data_points(0).count(),
            1u);
}

TEST(OtlpMetricExporter, RetriesRetryableStatusesThenSucceeds) {
  Receiver receiver;
  receiver.queue({503, 429});
  OtlpMetricExporter exporter(settings_for(receiver.url()));
  EXPECT_EQ(exporter.export_metrics(snapshot(), telemetry::Deadline::max()), ExportResult::success);
  EXPECT_EQ(receiver.received().size(), 3u);
  EXPECT_EQ(exporter.stats().retries, 2u);
  EXPECT_EQ(exporter.stats().batches_sent, 1u);
}

TEST(OtlpMetricExporter, OtherStatusesDropTheBatch) {
  Receiver receiver;
  receiver.queue({400});
  OtlpMetricExporter exporter(settings_for(receiver.url()));
  EXPECT_EQ(exporter.export_metrics(snapshot(), telemetry::Deadline::max()), ExportResult::failure);
  EXPECT_EQ(receiver.received().size(), 1u);
  EXPECT_EQ(exporter.stats().batches_dropped, 1u);
  EXPECT_EQ(exporter.stats().items_dropped, 2u);
  // The next export is independent.
  EXPECT_EQ(exporter.export_metrics(snapshot(), telemetry::Deadline::max()), ExportResult::success);
}

TEST(OtlpMetricExporter, PartialSuccessIsCounted) {
  Receiver receiver;
  opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceResponse response;
  response.mutable_partial_success()->set_rejected_data_points(1);
  receiver.reply_body(response.SerializeAsString());
  OtlpMetricExporter exporter(settings_for(receiver.url()));
  EXPECT_EQ(exporter.export_metrics(snapshot(), telemetry::Deadline::max()), ExportResult::success);
  EXPECT_EQ(exporter.stats().items_rejected, 1u);
}

TEST(OtlpMetricExporter, CollectorDownFailsWithinTheTimeout) {
  const gym::test::ReservedPort dead;  // bound, not listening: every connection is refused
  auto s = settings_for("http://127.0.0.1:" + dead.text() + "/v1/metrics");
  s.timeout = 300ms;
  OtlpMetricExporter exporter(s);
  auto start = Clock::now();
  EXPECT_EQ(exporter.export_metrics(snapshot(), telemetry::Deadline::max()), ExportResult::failure);
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_EQ(exporter.stats().batches_dropped, 1u);
}

TEST(OtlpMetricExporter, HangingCollectorFailsByTheDeadline) {
  // Listens (so connect succeeds) but never accepts nor answers.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  auto s = settings_for("http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/v1/metrics");
  {
    OtlpMetricExporter exporter(s);
    auto start = Clock::now();
    EXPECT_EQ(exporter.export_metrics(snapshot(), Clock::now() + 300ms), ExportResult::failure);
    EXPECT_LT(Clock::now() - start, 5s);
    exporter.shutdown(Clock::now() + 1s);
    EXPECT_EQ(exporter.export_metrics(snapshot(), Clock::now() + 300ms), ExportResult::failure);
  }
  ::close(fd);
}

}  // namespace
}  // namespace gym::exporters
