// Span micro-benchmarks (issue 14): what one span costs the thread that makes it (start and end
// through the real BatchSpanProcessor, whose exporter discards), the two span shapes of every HTTP
// exchange as client.cpp and server.cpp make them (attributes, traceparent out and in), the gate
// with the group off, and the exporter's side: one batch of 512 such spans encoded for each OTLP
// protocol. Figures and the command are in bench/RESULTS.md ("Tracing overhead").
#include <benchmark/benchmark.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "exporters/otlp/otlp_encoding.h"
#include "telemetry/config.h"
#include "telemetry/metrics/meter_provider.h"
#include "telemetry/traces/batch_span_processor.h"
#include "telemetry/traces/tracer.h"

namespace {

using namespace gym::telemetry;
using gym::exporters::OtlpProtocol;

// Takes every batch and drops it, counting spans (the queue's cost without any I/O).
class DiscardingExporter final : public SpanExporter {
 public:
  explicit DiscardingExporter(std::atomic<std::uint64_t>& seen) : seen_(seen) {}
  ExportResult export_batch(SpanBatch spans, Deadline) noexcept override {
    seen_ += spans.size();
    return ExportResult::success;
  }

 private:
  std::atomic<std::uint64_t>& seen_;
};

// A queue deep enough that the exporter thread keeps up (dropped_full should stay 0): a full
// queue's drop is cheaper than a queued span and would flatter the figures.
BatchSettings deep_queue() {
  BatchSettings s;
  s.max_queue_size = 1 << 20;
  return s;
}

struct Pipeline {
  std::atomic<std::uint64_t> exported{0};
  BatchSpanProcessor processor{std::make_unique<DiscardingExporter>(exported), deep_queue()};
  Tracer tracer{resolve_span_groups("all", "bench"), Sampler{SamplerKind::always_on}, &processor};
};

Pipeline& pipeline() {
  static Pipeline p;
  return p;
}

void report_drops(benchmark::State& state) {
  const auto stats = pipeline().processor.stats();
  state.counters["dropped_full"] = static_cast<double>(stats.dropped_full);
}

SpanContext remote_parent() {
  return *parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
}

// The attributes server.cpp gives a SERVER span (the status code once the response is out).
void set_server_attributes(Span& span) {
  span.set_attribute("http.request.method", "POST");
  span.set_attribute("http.route", "/seed_session");
  span.set_attribute("url.path", "/seed_session");
  span.set_attribute("url.scheme", "http");
  span.set_attribute("http.response.status_code", 200);
}

// Start and end, nothing else: the 150 ns goal of issue 14.
void BM_SpanStartEnd(benchmark::State& state) {
  const Tracer& tracer = pipeline().tracer;
  const SpanContext parent = remote_parent();
  for (auto _ : state) {
    Span span = tracer.start("gym.verify", SpanKind::internal, parent);
    span.end();
  }
  report_drops(state);
}
BENCHMARK(BM_SpanStartEnd);

// The CLIENT span of one outbound request, as client.cpp makes it.
void BM_ClientSpanWithTraceparent(benchmark::State& state) {
  const Tracer& tracer = pipeline().tracer;
  const SpanContext parent = remote_parent();
  const std::string url = "http://127.0.0.1:18231/seed_session";
  const std::string rollout = "17-3";
  for (auto _ : state) {
    Span span = tracer.start("HTTP POST", SpanKind::client, parent);
    span.set_attribute("http.request.method", "POST");
    span.set_attribute("url.full", url);
    span.set_attribute("nemo.gym.rollout.id", rollout);
    char header[kTraceparentSize];  // written into the request head, as client_exchange does
    write_traceparent(header, span.context());
    benchmark::DoNotOptimize(header);
    span.set_attribute("http.response.status_code", 200);
    span.end();
  }
  report_drops(state);
}
BENCHMARK(BM_ClientSpanWithTraceparent);

// The SERVER span of one inbound request, as server.cpp makes it.
void BM_ServerSpanFromTraceparent(benchmark::State& state) {
  const Tracer& tracer = pipeline().tracer;
  const std::string header = format_traceparent(remote_parent());
  for (auto _ : state) {
    SpanContext parent = *parse_traceparent(header);
    Span span = tracer.start("POST /seed_session", SpanKind::server, parent);
    set_server_attributes(span);
    span.end();
  }
  report_drops(state);
}
BENCHMARK(BM_ServerSpanFromTraceparent);

// What a site costs with its group off: one bit test.
void BM_SpanGroupOff(benchmark::State& state) {
  static const Tracer off;
  const SpanContext parent = remote_parent();
  for (auto _ : state) {
    Span span;
    if (off.on(SpanGroup::verify)) span = off.start("gym.verify", SpanKind::internal, parent);
    benchmark::DoNotOptimize(span);
  }
}
BENCHMARK(BM_SpanGroupOff);

// 512 finished spans (a full OTEL_BSP_MAX_EXPORT_BATCH_SIZE batch): half CLIENT, half SERVER.
std::vector<std::unique_ptr<SpanData>> batch_of_512() {
  struct Capture final : SpanProcessor {
    std::vector<std::unique_ptr<SpanData>> spans;
    void on_end(std::unique_ptr<SpanData> s) noexcept override { spans.push_back(std::move(s)); }
    bool force_flush(std::chrono::milliseconds) noexcept override { return true; }
    bool shutdown(std::chrono::milliseconds) noexcept override { return true; }
  } capture;
  const Tracer tracer(resolve_span_groups("all", "bench"), Sampler{SamplerKind::always_on},
                      &capture);
  const SpanContext parent = remote_parent();
  for (int i = 0; i < 256; ++i) {
    Span c = tracer.start("HTTP POST", SpanKind::client, parent);
    c.set_attribute("http.request.method", "POST");
    c.set_attribute("url.full", "http://127.0.0.1:18231/seed_session");
    c.set_attribute("nemo.gym.rollout.id", std::to_string(i) + "-0");
    c.set_attribute("http.response.status_code", 200);
    c.end();
    Span s = tracer.start("POST /seed_session", SpanKind::server, parent);
    set_server_attributes(s);
    s.end();
  }
  return std::move(capture.spans);
}

void encode_batch(benchmark::State& state, OtlpProtocol protocol) {
  const auto spans = batch_of_512();
  Resource resource;
  resource.attributes = AttributeSet({{"service.name", "example_single_tool_call_simple_agent"},
                                      {"service.instance.id", "4f3c2a"},
                                      {"nemo.run.id", "c8fe9bbe51c0"},
                                      {"process.pid", 4242}});
  const InstrumentationScope scope = gym_scope();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string body = gym::exporters::encode_request(resource, scope, spans, protocol);
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["ns_per_span"] = benchmark::Counter(
      static_cast<double>(spans.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_Encode512SpansProtobuf(benchmark::State& state) {
  encode_batch(state, OtlpProtocol::http_protobuf);
}
BENCHMARK(BM_Encode512SpansProtobuf)->Unit(benchmark::kMicrosecond);

void BM_Encode512SpansJson(benchmark::State& state) {
  encode_batch(state, OtlpProtocol::http_json);
}
BENCHMARK(BM_Encode512SpansJson)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
