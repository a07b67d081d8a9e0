// Telemetry SDK micro-benchmarks: record through bound and unbound handles, 1 and 2 threads, the
// disabled path, collection of 1000 series, and the cost of encoding that snapshot for export (OTLP
// and Prometheus text); then the hot-path recorders of the gym_metrics facade
// (telemetry/metrics/gym_metrics.h) as the servers and the pool call them, each on an enabled and a
// disabled provider in the same run. With prometheus-cpp found at configure time
// (GYM_BENCH_PROMETHEUS_CPP) the same record cases and the text serialisation run on it too, as the
// peer in the same binary. Figures and the command are in bench/RESULTS.md.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "exporters/otlp/otlp_encoding.h"
#include "exporters/prometheus/prometheus_text.h"
#include "telemetry/metrics/gym_metrics.h"
#include "telemetry/metrics/meter_provider.h"

#ifdef GYM_BENCH_PROMETHEUS_CPP
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#endif

namespace {

using namespace gym::telemetry;
using gym::exporters::OtlpProtocol;

// http.server.request.duration buckets (docs/design/telemetry-contract.md#histogram-buckets).
const std::vector<double> kSecondsBuckets{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25,
                                          0.5,   0.75, 1,     2.5,  5,     7.5, 10};

struct Instruments {
  MeterProvider provider;
  Counter<std::int64_t> counter = provider.create_counter<std::int64_t>("bench.counter");
  Histogram histogram = provider.create_histogram("bench.duration", "s", "", kSecondsBuckets);
  Gauge<double> gauge = provider.create_gauge<double>("bench.gauge");
  BoundCounter<std::int64_t> bound_counter = counter.bind({{"k", "v"}});
  BoundHistogram bound_histogram = histogram.bind({{"http.route", "/verify"},
                                                   {"http.request.method", "POST"},
                                                   {"http.response.status_code", 200}});
  BoundGauge<double> bound_gauge = gauge.bind();
};

Instruments& instruments() {
  static Instruments i;
  return i;
}

// Empty handles, as a disabled provider hands out. Globals, so each iteration reloads them.
Counter<std::int64_t> g_disabled_counter;
Histogram g_disabled_histogram;
BoundHistogram g_disabled_bound_histogram;

double value_for(std::int64_t i) { return 0.001 * static_cast<double>(i % 2000); }

void BM_HistogramRecordUnbound3Attrs(benchmark::State& state) {
  auto& h = instruments().histogram;
  std::string route = "/verify";
  std::int64_t i = state.thread_index();
  for (auto _ : state) {
    h.record(value_for(i++), {{"http.route", route},
                              {"http.request.method", "POST"},
                              {"http.response.status_code", 200}});
  }
}
BENCHMARK(BM_HistogramRecordUnbound3Attrs)->Threads(1)->Threads(2)->UseRealTime();

void BM_HistogramRecordBound(benchmark::State& state) {
  auto& h = instruments().bound_histogram;
  std::int64_t i = state.thread_index();
  for (auto _ : state) h.record(value_for(i++));
}
BENCHMARK(BM_HistogramRecordBound)->Threads(1)->Threads(2)->UseRealTime();

void BM_CounterAddUnbound1Attr(benchmark::State& state) {
  auto& c = instruments().counter;
  for (auto _ : state) c.add(1, {{"k", "v"}});
}
BENCHMARK(BM_CounterAddUnbound1Attr)->Threads(1)->Threads(2)->UseRealTime();

void BM_CounterAddBound(benchmark::State& state) {
  auto& c = instruments().bound_counter;
  for (auto _ : state) c.add(1);
}
BENCHMARK(BM_CounterAddBound)->Threads(1)->Threads(2)->UseRealTime();

void BM_GaugeSetBound(benchmark::State& state) {
  auto& g = instruments().bound_gauge;
  std::int64_t i = 0;
  for (auto _ : state) g.record(value_for(i++));
}
BENCHMARK(BM_GaugeSetBound)->Threads(1)->Threads(2)->UseRealTime();

void BM_DisabledCounterAdd(benchmark::State& state) {
  for (auto _ : state) {
    g_disabled_counter.add(1, {{"k", "v"}});
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_DisabledCounterAdd);

void BM_DisabledHistogramRecordUnbound3Attrs(benchmark::State& state) {
  std::int64_t i = 0;
  for (auto _ : state) {
    g_disabled_histogram.record(value_for(i++), {{"http.route", "/verify"},
                                                 {"http.request.method", "POST"},
                                                 {"http.response.status_code", 200}});
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_DisabledHistogramRecordUnbound3Attrs);

void BM_DisabledHistogramRecordBound(benchmark::State& state) {
  std::int64_t i = 0;
  for (auto _ : state) {
    g_disabled_bound_histogram.record(value_for(i++));
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_DisabledHistogramRecordBound);

// 1000 series: 500 histogram series with 3 attributes and 500 counter series.
struct ThousandSeries {
  MeterProvider provider;
  ThousandSeries() {
    auto h = provider.create_histogram("bench.collect.duration", "s", "", kSecondsBuckets);
    auto c = provider.create_counter<std::int64_t>("bench.collect.count", "{request}");
    for (int i = 0; i < 500; ++i) {
      std::string route = "/route" + std::to_string(i / 10);
      AttributeList attrs{{"http.route", route},
                          {"http.request.method", "POST"},
                          {"http.response.status_code", 200 + i % 10}};
      for (int k = 0; k < 20; ++k) h.record(0.003 * k, attrs);
      c.add(i, {{"nemo.gym.http.destination.server.name", route}, {"n", i}});
    }
  }
};

ThousandSeries& thousand() {
  static ThousandSeries t;
  return t;
}

void BM_Collect1000Series(benchmark::State& state) {
  auto& p = thousand().provider;
  for (auto _ : state) benchmark::DoNotOptimize(p.collect());
}
BENCHMARK(BM_Collect1000Series)->Unit(benchmark::kMicrosecond);

void encode(benchmark::State& state, OtlpProtocol protocol) {
  auto snapshot = thousand().provider.collect();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string body = gym::exporters::encode_request(snapshot, protocol);
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}

void BM_EncodeProtobuf1000Series(benchmark::State& state) {
  encode(state, OtlpProtocol::http_protobuf);
}
BENCHMARK(BM_EncodeProtobuf1000Series)->Unit(benchmark::kMicrosecond);

void BM_EncodeJson1000Series(benchmark::State& state) { encode(state, OtlpProtocol::http_json); }
BENCHMARK(BM_EncodeJson1000Series)->Unit(benchmark::kMicrosecond);

void BM_RenderPrometheusText1000Series(benchmark::State& state) {
  auto snapshot = thousand().provider.collect();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string body = gym::exporters::render_prometheus_text(snapshot);
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderPrometheusText1000Series)->Unit(benchmark::kMicrosecond);

// A scrape of our endpoint: collect, then render.
void BM_CollectAndRenderPrometheusText1000Series(benchmark::State& state) {
  auto& p = thousand().provider;
  for (auto _ : state) {
    std::string body = gym::exporters::render_prometheus_text(p.collect());
    benchmark::DoNotOptimize(body);
  }
}
BENCHMARK(BM_CollectAndRenderPrometheusText1000Series)->Unit(benchmark::kMicrosecond);

// ---- The gym_metrics facade: what one request, rollout or pool acquisition records ----
// The facade of an agent server (it has every recorder below), on an enabled provider and on a
// disabled one (telemetry off: empty handles, one branch per recorder). The arguments are those
// of the servers: a route template and a static method label (RequestMetrics in
// http/server.cpp), the Host header a Gym client sends, one pool destination pointer per name
// (http/pool_metrics.cpp caches it).

MeterProviderOptions provider_options(bool enabled) {
  MeterProviderOptions o;
  o.enabled = enabled;
  return o;
}

struct Facade {
  explicit Facade(bool enabled) : provider(provider_options(enabled)) {}
  MeterProvider provider;
  GymMetrics metrics{provider, ProcessRole::agent_server};
  PoolDestination* pool = metrics.pool_destination("example_single_tool_call");
};

Facade& facade(bool enabled) {
  static Facade on(true), off(false);
  return enabled ? on : off;
}

// http.server.request.duration with its 3-attribute series looked up on every request (sort,
// hash, lock-free lookup): the HTTP server's cost before it kept bound series per loop.
void BM_FacadeRecordHttpRequest(benchmark::State& state, bool enabled) {
  const GymMetrics& m = facade(enabled).metrics;
  const std::string_view route = "/run", method = http_method_label("POST");
  std::int64_t i = 0;
  for (auto _ : state) {
    m.http_request_series(route, method, 200).record(value_for(i++));
    benchmark::ClobberMemory();
  }
}
BENCHMARK_CAPTURE(BM_FacadeRecordHttpRequest, enabled, true);
BENCHMARK_CAPTURE(BM_FacadeRecordHttpRequest, disabled, false);

// http.server.active_requests: the +1 at the request head and the -1 at its end, the 2-attribute
// series looked up for each.
void BM_FacadeActiveRequestPair(benchmark::State& state, bool enabled) {
  const GymMetrics& m = facade(enabled).metrics;
  const std::string host = "127.0.0.1:41235";
  const std::string_view method = http_method_label("POST");
  for (auto _ : state) {
    m.active_request_series(host, method).add(1);
    m.active_request_series(host, method).add(-1);
    benchmark::ClobberMemory();
  }
}
BENCHMARK_CAPTURE(BM_FacadeActiveRequestPair, enabled, true);
BENCHMARK_CAPTURE(BM_FacadeActiveRequestPair, disabled, false);

// What the HTTP server records per request since it binds its series once per event loop
// (src/http/server.cpp, ServerSeries): the duration sample and the active-request pair through
// bound handles, the peer of the two unbound cases above.
void BM_FacadeHttpServerBoundPerRequest(benchmark::State& state, bool enabled) {
  const GymMetrics& m = facade(enabled).metrics;
  const std::string_view method = http_method_label("POST");
  const auto duration = m.http_request_series("/run", method, 200);
  const auto active = m.active_request_series("127.0.0.1:41235", method);
  std::int64_t i = 0;
  for (auto _ : state) {
    active.add(1);
    duration.record(value_for(i++));
    active.add(-1);
    benchmark::ClobberMemory();
  }
}
BENCHMARK_CAPTURE(BM_FacadeHttpServerBoundPerRequest, enabled, true);
BENCHMARK_CAPTURE(BM_FacadeHttpServerBoundPerRequest, disabled, false);

// gym.http.connection_pool.connect_total: one relaxed increment per acquisition.
void BM_FacadePoolAcquisitionStarted(benchmark::State& state, bool enabled) {
  PoolDestination* d = facade(enabled).pool;
  for (auto _ : state) {
    d->acquisition_started();
    benchmark::ClobberMemory();
  }
}
BENCHMARK_CAPTURE(BM_FacadePoolAcquisitionStarted, enabled, true);
BENCHMARK_CAPTURE(BM_FacadePoolAcquisitionStarted, disabled, false);

// gym.http.connection_pool.queue_duration_ms: one sample per acquisition that waited (bound).
void BM_FacadePoolWaitFinished(benchmark::State& state, bool enabled) {
  const PoolDestination* d = facade(enabled).pool;
  std::int64_t i = 0;
  for (auto _ : state) {
    d->wait_finished(QueueConstraint::per_host, QueueOutcome::ok, value_for(i++));
    benchmark::ClobberMemory();
  }
}
BENCHMARK_CAPTURE(BM_FacadePoolWaitFinished, enabled, true);
BENCHMARK_CAPTURE(BM_FacadePoolWaitFinished, disabled, false);

// gym.rollout.duration_ms: one sample per /run (bound, no attributes).
void BM_FacadeRecordRollout(benchmark::State& state, bool enabled) {
  const GymMetrics& m = facade(enabled).metrics;
  std::int64_t i = 0;
  for (auto _ : state) {
    m.record_rollout(100.0 * value_for(i++));
    benchmark::ClobberMemory();
  }
}
BENCHMARK_CAPTURE(BM_FacadeRecordRollout, enabled, true);
BENCHMARK_CAPTURE(BM_FacadeRecordRollout, disabled, false);

#ifdef GYM_BENCH_PROMETHEUS_CPP
// ---- Peer: prometheus-cpp (Debian prometheus-cpp-dev), the same cases ----
// Its "unbound" call is Family::Add(labels, buckets), which returns the existing series for a
// label set seen before; the label map is built once (its best case: no allocation for the
// labels, though Add still constructs a candidate Histogram per call). Its "bound" call holds
// the reference Add returned.

const prometheus::Histogram::BucketBoundaries kPeerBuckets(kSecondsBuckets.begin(),
                                                           kSecondsBuckets.end());
const prometheus::Labels kPeerLabels{{"http_route", "/verify"},
                                     {"http_request_method", "POST"},
                                     {"http_response_status_code", "200"}};

struct PeerInstruments {
  prometheus::Registry registry;
  prometheus::Family<prometheus::Histogram>& histograms =
      prometheus::BuildHistogram().Name("bench_duration_seconds").Help("h").Register(registry);
  prometheus::Family<prometheus::Counter>& counters =
      prometheus::BuildCounter().Name("bench_counter_total").Help("c").Register(registry);
  prometheus::Family<prometheus::Gauge>& gauges =
      prometheus::BuildGauge().Name("bench_gauge").Help("g").Register(registry);
  prometheus::Histogram& histogram = histograms.Add(kPeerLabels, kPeerBuckets);
  prometheus::Counter& counter = counters.Add({{"k", "v"}});
  prometheus::Gauge& gauge = gauges.Add({});
};

PeerInstruments& peer() {
  static PeerInstruments p;
  return p;
}

void BM_PeerHistogramObserveAdd3Labels(benchmark::State& state) {
  auto& family = peer().histograms;
  std::int64_t i = state.thread_index();
  for (auto _ : state) family.Add(kPeerLabels, kPeerBuckets).Observe(value_for(i++));
}
BENCHMARK(BM_PeerHistogramObserveAdd3Labels)->Threads(1)->Threads(2)->UseRealTime();

void BM_PeerHistogramObserveHeld(benchmark::State& state) {
  auto& h = peer().histogram;
  std::int64_t i = state.thread_index();
  for (auto _ : state) h.Observe(value_for(i++));
}
BENCHMARK(BM_PeerHistogramObserveHeld)->Threads(1)->Threads(2)->UseRealTime();

void BM_PeerCounterIncrementAdd1Label(benchmark::State& state) {
  auto& family = peer().counters;
  const prometheus::Labels labels{{"k", "v"}};
  for (auto _ : state) family.Add(labels).Increment();
}
BENCHMARK(BM_PeerCounterIncrementAdd1Label)->Threads(1)->Threads(2)->UseRealTime();

void BM_PeerCounterIncrementHeld(benchmark::State& state) {
  auto& c = peer().counter;
  for (auto _ : state) c.Increment();
}
BENCHMARK(BM_PeerCounterIncrementHeld)->Threads(1)->Threads(2)->UseRealTime();

void BM_PeerGaugeSetHeld(benchmark::State& state) {
  auto& g = peer().gauge;
  std::int64_t i = 0;
  for (auto _ : state) g.Set(value_for(i++));
}
BENCHMARK(BM_PeerGaugeSetHeld)->Threads(1)->Threads(2)->UseRealTime();

// The same 1000 series as ThousandSeries, on a prometheus-cpp registry.
struct PeerThousandSeries {
  prometheus::Registry registry;
  PeerThousandSeries() {
    auto& h = prometheus::BuildHistogram()
                  .Name("bench_collect_duration_seconds")
                  .Help("h")
                  .Register(registry);
    auto& c =
        prometheus::BuildCounter().Name("bench_collect_count_total").Help("c").Register(registry);
    for (int i = 0; i < 500; ++i) {
      std::string route = "/route" + std::to_string(i / 10);
      auto& series = h.Add({{"http_route", route},
                            {"http_request_method", "POST"},
                            {"http_response_status_code", std::to_string(200 + i % 10)}},
                           kPeerBuckets);
      for (int k = 0; k < 20; ++k) series.Observe(0.003 * k);
      c.Add({{"nemo_gym_http_destination_server_name", route}, {"n", std::to_string(i)}})
          .Increment(i);
    }
  }
};

// A scrape of prometheus-cpp: Registry::Collect, then TextSerializer.
void BM_PeerCollectAndSerializeText1000Series(benchmark::State& state) {
  static PeerThousandSeries t;
  const prometheus::TextSerializer serializer;
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string body = serializer.Serialize(t.registry.Collect());
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_PeerCollectAndSerializeText1000Series)->Unit(benchmark::kMicrosecond);
#endif

}  // namespace

BENCHMARK_MAIN();
