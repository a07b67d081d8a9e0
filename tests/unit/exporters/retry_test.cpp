// Export decisions (exporters/otlp/retry.h) without sockets; gzip round trip.
#include "exporters/otlp/retry.h"

#include <gtest/gtest.h>

#include "exporters/otlp/gzip.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"

namespace gym::exporters {
namespace {

using namespace std::chrono_literals;

TEST(Retry, Classification) {
  EXPECT_EQ(classify(200), AttemptOutcome::success);
  EXPECT_EQ(classify(204), AttemptOutcome::success);
  for (int s : {429, 502, 503, 504}) EXPECT_EQ(classify(s), AttemptOutcome::retryable) << s;
  EXPECT_EQ(classify(std::nullopt), AttemptOutcome::retryable);
  for (int s : {400, 401, 404, 413, 500, 501})
    EXPECT_EQ(classify(s), AttemptOutcome::permanent) << s;
}

TEST(Retry, BackoffDoublesWithJitterAndHonoursRetryAfter) {
  EXPECT_EQ(backoff(1, 0, std::nullopt), 1000ms);
  EXPECT_EQ(backoff(2, 0, std::nullopt), 2000ms);
  EXPECT_EQ(backoff(3, 0, std::nullopt), 4000ms);
  EXPECT_EQ(backoff(1, 1, std::nullopt), 1200ms);
  EXPECT_EQ(backoff(1, -1, std::nullopt), 800ms);
  EXPECT_EQ(backoff(3, 5, std::nullopt), 4800ms);  // jitter clamped to +-20 %
  EXPECT_EQ(backoff(3, 0, 7000ms), 7000ms);
  EXPECT_EQ(backoff(1, 0, 0ms), 0ms);
}

TEST(Retry, RetryAfterSecondsOnly) {
  EXPECT_EQ(parse_retry_after("120"), 120000ms);
  EXPECT_EQ(parse_retry_after(" 0 "), 0ms);
  EXPECT_FALSE(parse_retry_after(""));
  EXPECT_FALSE(parse_retry_after("-1"));
  EXPECT_FALSE(parse_retry_after("1.5"));
  EXPECT_FALSE(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"));
}

TEST(Retry, PartialSuccessInBothEncodings) {
  opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceResponse r;
  r.mutable_partial_success()->set_rejected_data_points(3);
  r.mutable_partial_success()->set_error_message("bad unit");
  auto ps = parse_partial_success(r.SerializeAsString(), OtlpProtocol::http_protobuf);
  ASSERT_TRUE(ps);
  EXPECT_EQ(ps->rejected, 3);
  EXPECT_EQ(ps->error_message, "bad unit");
  EXPECT_FALSE(parse_partial_success("", OtlpProtocol::http_protobuf));
  opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceResponse empty;
  empty.mutable_partial_success();
  EXPECT_FALSE(parse_partial_success(empty.SerializeAsString(), OtlpProtocol::http_protobuf));

  ps = parse_partial_success(R"({"partialSuccess":{"rejectedDataPoints":"5","errorMessage":"x"}})",
                             OtlpProtocol::http_json);
  ASSERT_TRUE(ps);
  EXPECT_EQ(ps->rejected, 5);
  EXPECT_EQ(parse_partial_success(R"({"partialSuccess":{"rejectedDataPoints":2}})",
                                  OtlpProtocol::http_json)
                ->rejected,
            2);
  EXPECT_FALSE(parse_partial_success("{}", OtlpProtocol::http_json));
  EXPECT_FALSE(parse_partial_success("not json", OtlpProtocol::http_json));
  // gRPC responses are protobuf.
  ps = parse_partial_success(r.SerializeAsString(), OtlpProtocol::grpc);
  ASSERT_TRUE(ps);
  EXPECT_EQ(ps->rejected, 3);
}

TEST(Retry, PartialSuccessOfEverySignal) {
  opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse traces;
  traces.mutable_partial_success()->set_rejected_spans(4);
  traces.mutable_partial_success()->set_error_message("span too large");
  auto ps = parse_partial_success(traces.SerializeAsString(), OtlpProtocol::grpc, Signal::traces);
  ASSERT_TRUE(ps);
  EXPECT_EQ(ps->rejected, 4);
  EXPECT_EQ(ps->error_message, "span too large");
  opentelemetry::proto::collector::logs::v1::ExportLogsServiceResponse logs;
  logs.mutable_partial_success()->set_rejected_log_records(6);
  ps = parse_partial_success(logs.SerializeAsString(), OtlpProtocol::http_protobuf, Signal::logs);
  ASSERT_TRUE(ps);
  EXPECT_EQ(ps->rejected, 6);
  EXPECT_EQ(ps->error_message, "");

  ps = parse_partial_success(R"({"partialSuccess":{"rejectedSpans":"2","errorMessage":"y"}})",
                             OtlpProtocol::http_json, Signal::traces);
  ASSERT_TRUE(ps);
  EXPECT_EQ(ps->rejected, 2);
  EXPECT_EQ(ps->error_message, "y");
  ps = parse_partial_success(R"({"partialSuccess":{"rejectedLogRecords":9}})",
                             OtlpProtocol::http_json, Signal::logs);
  ASSERT_TRUE(ps);
  EXPECT_EQ(ps->rejected, 9);
  // Another signal's key is not this signal's count.
  EXPECT_FALSE(parse_partial_success(R"({"partialSuccess":{"rejectedSpans":2}})",
                                     OtlpProtocol::http_json, Signal::metrics));
}

TEST(Retry, GrpcClassification) {
  EXPECT_EQ(classify_grpc(0), AttemptOutcome::success);
  for (int code : {4, 8, 14}) EXPECT_EQ(classify_grpc(code), AttemptOutcome::retryable) << code;
  // CANCELLED, UNKNOWN, INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, ..., UNAUTHENTICATED.
  for (int code : {1, 2, 3, 5, 6, 7, 9, 10, 11, 12, 13, 15, 16})
    EXPECT_EQ(classify_grpc(code), AttemptOutcome::permanent) << code;
}

TEST(Retry, RetryDelayOnlyWithinTheBudget) {
  const auto now = Clock::now();
  EXPECT_EQ(retry_delay(1, 0, std::nullopt, now, now + 5s), 1000ms);
  EXPECT_EQ(retry_delay(2, 0, std::nullopt, now, now + 5s), 2000ms);
  EXPECT_FALSE(retry_delay(3, 0, std::nullopt, now, now + 4s));  // 4 s reaches the end
  EXPECT_FALSE(retry_delay(1, 0, std::nullopt, now, now + 200ms));
  EXPECT_EQ(retry_delay(1, 0, 0ms, now, now + 200ms), 0ms);
  EXPECT_FALSE(retry_delay(1, 0, 0ms, now, now));
}

TEST(Retry, FailureLogFirstAtOnceThenOncePerInterval) {
  FailureLog log(10s);
  auto t0 = Clock::now();
  auto first = log.dropped(5, "connection refused", t0);
  ASSERT_TRUE(first);
  EXPECT_NE(first->find("5 point(s)"), std::string::npos) << *first;
  EXPECT_FALSE(log.dropped(7, "HTTP 503", t0 + 1s));
  EXPECT_FALSE(log.dropped(8, "HTTP 503", t0 + 9s));
  auto summary = log.dropped(9, "HTTP 503", t0 + 10s);
  ASSERT_TRUE(summary);
  EXPECT_NE(summary->find("3 batch(es), 24 point(s)"), std::string::npos) << *summary;
  EXPECT_NE(summary->find("HTTP 503"), std::string::npos) << *summary;
  EXPECT_FALSE(log.dropped(1, "x", t0 + 11s));
}

TEST(Retry, FailureLogNamesTheSignalAndItsItems) {
  const auto t0 = Clock::now();
  FailureLog traces(10s, Signal::traces);
  auto first = traces.dropped(512, "gRPC UNAVAILABLE from localhost:4317: refused", t0);
  ASSERT_TRUE(first);
  EXPECT_EQ(
      first->rfind("telemetry: traces export failed, dropped 512 span(s): gRPC UNAVAILABLE", 0), 0u)
      << *first;
  EXPECT_FALSE(traces.dropped(3, "x", t0 + 1s));
  auto last = traces.pending(t0 + 2s);
  ASSERT_TRUE(last);
  EXPECT_NE(last->find("telemetry: traces export failing: dropped 1 batch(es), 3 span(s)"),
            std::string::npos)
      << *last;
  FailureLog logs(10s, Signal::logs);
  first = logs.dropped(7, "HTTP 400", t0);
  ASSERT_TRUE(first);
  EXPECT_NE(first->find("telemetry: logs export failed, dropped 7 log record(s): HTTP 400"),
            std::string::npos)
      << *first;
}

TEST(Retry, FailureLogSummarisesHeldBackDropsAtShutdown) {
  FailureLog log(10s);
  auto t0 = Clock::now();
  EXPECT_FALSE(log.pending(t0));  // nothing dropped
  ASSERT_TRUE(log.dropped(5, "connection refused", t0));
  EXPECT_FALSE(log.pending(t0 + 1s));  // everything dropped so far was logged
  EXPECT_FALSE(log.dropped(7, "HTTP 503", t0 + 1500ms));
  auto last = log.pending(t0 + 2s);
  ASSERT_TRUE(last);
  EXPECT_NE(last->find("dropped 1 batch(es), 7 point(s) in the last 2.0 s; last error: HTTP 503"),
            std::string::npos)
      << *last;
  EXPECT_FALSE(log.pending(t0 + 3s));
}

TEST(Gzip, RoundTrip) {
  std::string data;
  for (int i = 0; i < 5000; ++i) data += "metric " + std::to_string(i) + "\n";
  std::string packed = gzip(data);
  EXPECT_LT(packed.size(), data.size() / 3);
  ASSERT_GE(packed.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(packed[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(packed[1]), 0x8b);
  EXPECT_EQ(gunzip(packed), data);
  EXPECT_EQ(gunzip(gzip("")), "");
  EXPECT_THROW(gunzip("not gzip"), std::runtime_error);
}

}  // namespace
}  // namespace gym::exporters
