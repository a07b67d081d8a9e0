// Answers without end, and trace state that is not W3C's (issue 28 items 4 and 9), against real
// processes: a model server whose endpoint streams an endless body, `gym env start` whose model
// endpoint answers GET /models without end, and an OTLP/HTTP collector answering every export
// without end (tests/support/raw_http_server.cpp). Each must fail with a message naming the limit
// and stay small: the peak resident memory of every process the test started (getrusage of the
// children once they are reaped: the orchestrator reaps its servers) is asserted, not a time.
// Then a model server that receives a malformed tracestate does not pass it on to its endpoint.
#include "files.h"
#include "live_deployment.h"
#include "process.h"
#include "telemetry_recorder.h"
#include "temp_dir.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace json = boost::json;
using gym::test::ChildProcess;
using gym::test::Deployment;
using gym::test::FakeEndpoint;
using gym::test::TempDir;
using gym::test::write_file;
using namespace std::chrono_literals;

namespace {

// Far above what these processes need (tens of MB), far below what the endless answers cost
// without a bound (hundreds of MB per second of reading).
constexpr std::uint64_t kMaxRss = 300ull << 20;

// The largest peak resident memory of the children (and their descendants) reaped so far,
// printed for the record ("[figures] ...").
std::uint64_t children_peak_rss_bytes() {
  rusage usage{};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  std::printf("[figures] peak RSS of the processes started: %ld KiB\n", usage.ru_maxrss);
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
}

std::unique_ptr<ChildProcess> raw_server(const std::string& mode) {
  return std::make_unique<ChildProcess>(std::vector<std::string>{
      gym::test::build_path("tests/support/gym_raw_http_server"), "--mode", mode});
}

std::string base_of(int port) { return "http://127.0.0.1:" + std::to_string(port) + "/v1"; }

// A vllm_model in front of `base_url`.
std::string vllm_config(TempDir& tmp, const std::string& base_url) {
  return write_file(
      tmp, "m.yaml",
      "policy_model:\n  responses_api_models:\n    vllm_model:\n      base_url: " + base_url +
          "\n      api_key: EMPTY\n      model: fake-model\n"
          "      return_token_id_information: false\n");
}

std::string text_of(const gym::test::Answer& a) {
  return a.body.is_string() ? std::string(a.body.as_string()) : json::serialize(a.body);
}

}  // namespace

// A model server in front of an endpoint answering without end (gym_raw_http_server in `mode`);
// the readiness probe of the endpoint is skipped (it would see the endless answer too: the next
// tests). The call fails at once, with the limit named; "{base}" in `error` stands for the
// endpoint's base URL.
struct EndlessAnswer {
  const char* name;
  const char* mode;
  std::string overrides;       // of the deployment, besides the skipped probe
  std::string error;           // the model server's answer: all of it,
  bool error_is_part = false;  // or a part of it

  friend void PrintTo(const EndlessAnswer& c, std::ostream* os) { *os << c.name; }
};

std::string with_base(std::string text, const std::string& base) {
  for (auto at = text.find("{base}"); at != std::string::npos; at = text.find("{base}", at))
    text.replace(at, 6, base);
  return text;
}

class ModelServerResponseBound : public ::testing::TestWithParam<EndlessAnswer> {};

TEST_P(ModelServerResponseBound, Case) {
  const EndlessAnswer& c = GetParam();
  auto endpoint = raw_server(c.mode);
  const int port = endpoint->wait_port();
  ASSERT_GT(port, 0);
  TempDir tmp;
  Deployment d("--config " + vllm_config(tmp, base_of(port)) +
                   " ++model_endpoint_readiness_timeout_seconds=0 " + c.overrides,
               tmp.file("log"));
  ASSERT_TRUE(d.ready()) << d.output();
  const auto a =
      gym::test::post_json(d.port_of("policy_model"), "/v1/responses", R"({"input":"hi"})");
  EXPECT_EQ(a.status, 502) << text_of(a);
  const std::string error = with_base(c.error, base_of(port));
  if (c.error_is_part) {
    EXPECT_NE(text_of(a).find(error), std::string::npos) << text_of(a);
  } else {
    EXPECT_EQ(text_of(a), error);
  }
  d.stop();  // the orchestrator reaps the model server: its peak memory is counted below
  EXPECT_LT(children_peak_rss_bytes(), kMaxRss);
}

const EndlessAnswer kEndlessAnswers[] = {
    // model_call_timeout_seconds only ends the call of a client without a bound.
    {.name = "AModelServerCutsAnEndlessAnswerAtModelResponseMaxBytes",
     .mode = "endless-chunked",
     .overrides = "++model_call_timeout_seconds=5",
     .error = "model endpoint {base}/chat/completions gave no answer: response body from "
              "{base}/chat/completions exceeded 67108864 bytes (model_response_max_bytes)"},
    {.name = "ModelResponseMaxBytesIsASetting",
     .mode = "endless-length",  // Content-Length: 10^12
     .overrides = "++model_response_max_bytes=1000",
     .error = "exceeded 1000 bytes (model_response_max_bytes)",
     .error_is_part = true},
};

INSTANTIATE_TEST_SUITE_P(Table, ModelServerResponseBound, ::testing::ValuesIn(kEndlessAnswers),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ResponseBounds, AModelResponseMaxBytesThatIsNoByteCountStopsTheStart) {
  auto endpoint = raw_server("endless-length");
  const int port = endpoint->wait_port();
  ASSERT_GT(port, 0);
  TempDir tmp;
  Deployment bad("--config " + vllm_config(tmp, base_of(port)) + " ++model_response_max_bytes=-1",
                 tmp.file("log"));
  EXPECT_EQ(bad.proc().wait_exit(60s), 1) << bad.output();
  EXPECT_NE(bad.output().find("model_response_max_bytes"), std::string::npos) << bad.output();
}

TEST(ResponseBounds, AnEndlessModelListKeepsTheOrchestratorWaitingWithABoundedProbe) {
  // GET <base_url>/models (readiness and preflight) answers without end: before, the orchestrator
  // kept every byte of each 5 s probe (3.2 GB here).
  auto endpoint = raw_server("endless-chunked");
  const int port = endpoint->wait_port();
  ASSERT_GT(port, 0);
  TempDir tmp;
  Deployment d("--config " + vllm_config(tmp, base_of(port)) +
                   " ++model_endpoint_readiness_timeout_seconds=4",
               tmp.file("log"));
  EXPECT_EQ(d.proc().wait_exit(120s), 2) << d.output();
  const std::string log = d.output();
  EXPECT_NE(log.find("waiting for model endpoint " + base_of(port) +
                     " (policy_model.responses_api_models.vllm_model.base_url): response body "
                     "from " +
                     base_of(port) + "/models exceeded 1048576 bytes (the probe's limit)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("did not answer within model_endpoint_readiness_timeout_seconds=4"),
            std::string::npos)
      << log;
  EXPECT_LT(children_peak_rss_bytes(), kMaxRss);
}

TEST(ResponseBounds, AnOtlpCollectorAnsweringWithoutEndFailsTheExportOnly) {
  auto collector = raw_server("endless-chunked");
  const int port = collector->wait_port();
  ASSERT_GT(port, 0);
  ChildProcess recorder(
      {gym::test::build_path("tests/support/gym_telemetry_recorder")},
      gym::test::collector_env("http://127.0.0.1:" + std::to_string(port), "http/protobuf", 200),
      /*merge_stderr=*/true);
  const std::string rest = recorder.wait_for_line("{\"records\":", 60s);
  recorder.drain(10s);
  EXPECT_EQ(recorder.wait_exit(10s), 0) << recorder.output();
  ASSERT_FALSE(rest.empty()) << recorder.output();
  const auto result = json::parse("{\"records\":" + rest).as_object();
  EXPECT_EQ(result.at("otlp").at("batches_sent").to_number<std::uint64_t>(), 0u);
  EXPECT_GE(result.at("otlp").at("batches_dropped").to_number<std::uint64_t>(), 1u);
  EXPECT_EQ(result.at("otlp").at("retries").to_number<std::uint64_t>(), 0u) << recorder.output();
  EXPECT_NE(recorder.output().find("response body from http://127.0.0.1:" + std::to_string(port) +
                                   "/v1/metrics exceeded 65536 bytes (the OTLP exporter's limit "
                                   "for a collector's answer)"),
            std::string::npos)
      << recorder.output();
  EXPECT_LT(children_peak_rss_bytes(), kMaxRss);
}

TEST(TraceStatePropagation, AMalformedTracestateIsDroppedAndTheTraceparentKept) {
  FakeEndpoint fake;
  TempDir tmp;
  const std::string env =
      "NEMO_GYM_OTEL_ENABLED=1 NEMO_GYM_OTEL_EXPORTER=console "
      "NEMO_GYM_OTEL_CONSOLE_PATH=" +
      tmp.file("spans.jsonl") +
      " NEMO_GYM_OTEL_SPAN_GROUPS=server,http_client OTEL_SDK_DISABLED= "
      "NEMO_LENS_ENABLED= OTEL_TRACES_SAMPLER= OTEL_TRACES_SAMPLER_ARG=";
  Deployment d("--config " + vllm_config(tmp, fake.base()), tmp.file("log"), env);
  ASSERT_TRUE(d.ready()) << d.output();
  const int port = d.port_of("policy_model");
  const std::string trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  const std::string traceparent = "traceparent: 00-" + trace_id + "-00f067aa0ba902b7-01\r\n";
  // What the endpoint received with the call the model server made for one request.
  const auto forwarded = [&](const std::string& tracestate) {
    const auto raw =
        gym::test::http_raw(port,
                            gym::test::post("/v1/responses", R"({"input":"hi"})",
                                            traceparent + "tracestate: " + tracestate + "\r\n"),
                            60000ms);
    EXPECT_EQ(gym::test::status_of(raw), 200) << raw;
    const auto received = fake.received();
    return received.empty() ? json::object{} : received.back().at("headers").as_object();
  };
  // Printable ASCII, under 512 characters, and still not a W3C list: each was passed on before.
  for (const std::string garbage : {"Upper=1", "no-equals-sign", "a=1,a=2", "k=v=w", "@x=1"}) {
    SCOPED_TRACE(garbage);
    const auto headers = forwarded(garbage);
    ASSERT_TRUE(headers.contains("traceparent")) << json::serialize(headers);
    EXPECT_NE(std::string(headers.at("traceparent").as_string()).find(trace_id), std::string::npos)
        << "the caller's trace is kept";
    EXPECT_FALSE(headers.contains("tracestate")) << json::serialize(headers);
  }
  const auto headers = forwarded("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE");
  ASSERT_TRUE(headers.contains("tracestate")) << json::serialize(headers);
  EXPECT_EQ(headers.at("tracestate").as_string(), "rojo=00f067aa0ba902b7, congo=t61rcWkgMzE");
}
