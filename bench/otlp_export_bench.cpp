// The cost of exporting one metrics batch (1000 series, as telemetry_bench's collect and encode
// cases) through OtlpMetricExporter over grpc and over http/protobuf (bench/RESULTS.md, "OTLP
// export: gRPC vs http/protobuf").
//
// Usage: otlp_export_bench [exports per protocol, default 300]
//
// The collector is a sink in a child process (this binary with --sink grpc|http: a grpc++
// generic service, or a gym_http server, answering every export with an empty OK), so the
// figures are the exporting process's alone: per export, the wall time of export_metrics() (the
// caller waits for the answer) and the CPU time of the whole process (getrusage: the caller's
// encoding, the sender's thread and gRPC's own threads). Rounds alternate the protocols; each
// exporter is warmed up first (connection made). Prints one line per protocol.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <boost/asio/awaitable.hpp>

#include "exporters/otlp/otlp_encoding.h"
#include "exporters/otlp/otlp_metric_exporter.h"
#include "http/server.h"
#include "telemetry/metrics/meter_provider.h"

namespace {

using namespace gym::telemetry;
using gym::exporters::OtlpProtocol;
using Clock = std::chrono::steady_clock;

// ---- The sinks (child process) ----

int grpc_sink() {
  grpc::AsyncGenericService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterAsyncGenericService(&service);
  auto cq = builder.AddCompletionQueue();
  auto server = builder.BuildAndStart();
  std::printf("LISTENING %d\n", port);
  std::fflush(stdout);
  struct Call {
    grpc::GenericServerContext context;
    grpc::GenericServerAsyncReaderWriter stream{&context};
    grpc::ByteBuffer request;
    int step = 0;
  };
  auto next = [&] {
    auto* c = new Call;
    service.RequestCall(&c->context, &c->stream, cq.get(), cq.get(), c);
  };
  next();
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) {
    auto* c = static_cast<Call*>(tag);
    if (!ok) {
      delete c;
      continue;
    }
    switch (c->step++) {
      case 0:  // a call arrived
        next();
        c->stream.Read(&c->request, c);
        break;
      case 1: {  // its request was read: an empty ExportMetricsServiceResponse
        grpc::Slice empty;
        c->stream.WriteAndFinish(grpc::ByteBuffer(&empty, 1), grpc::WriteOptions(),
                                 grpc::Status::OK, c);
        break;
      }
      default:
        delete c;
    }
  }
  return 0;
}

int http_sink() {
  gym::http::Router router;
  router.post("/v1/metrics",
              [](gym::http::Request&) -> boost::asio::awaitable<gym::http::Response> {
                gym::http::Response res;
                res.content_type = "application/x-protobuf";
                co_return res;
              });
  gym::http::HttpServer server(std::move(router), gym::http::ServerOptions{});
  std::printf("LISTENING %d\n", server.bind());
  std::fflush(stdout);
  return server.run();
}

// ---- The exporting side ----

struct Sink {
  pid_t pid = -1;
  int port = -1;
  explicit Sink(const char* kind) {
    int out[2];
    if (::pipe(out) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::execl("/proc/self/exe", "otlp_export_bench", "--sink", kind, nullptr);
      ::_exit(127);
    }
    ::close(out[1]);
    FILE* f = ::fdopen(out[0], "r");
    if (std::fscanf(f, "LISTENING %d", &port) != 1) port = -1;
    std::fclose(f);
  }
  ~Sink() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// 500 histogram series with 3 attributes and 500 counter series (telemetry_bench's).
MetricsSnapshot thousand_series(MeterProvider& provider) {
  const std::vector<double> buckets{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25,
                                    0.5,   0.75, 1,     2.5,  5,     7.5, 10};
  auto h = provider.create_histogram("bench.collect.duration", "s", "", buckets);
  auto c = provider.create_counter<std::int64_t>("bench.collect.count", "{request}");
  for (int i = 0; i < 500; ++i) {
    std::string route = "/route" + std::to_string(i / 10);
    AttributeList attrs{{"http.route", route},
                        {"http.request.method", "POST"},
                        {"http.response.status_code", 200 + i % 10}};
    for (int k = 0; k < 20; ++k) h.record(0.003 * k, attrs);
    c.add(i, {{"nemo.gym.http.destination.server.name", route}, {"n", i}});
  }
  return provider.collect();
}

struct Side {
  const char* name;
  OtlpProtocol protocol;
  std::unique_ptr<Sink> sink;
  std::unique_ptr<gym::exporters::OtlpMetricExporter> exporter;
  std::vector<double> wall_us;
  double cpu = 0;
  int failures = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--sink") {
    return std::string(argv[2]) == "grpc" ? grpc_sink() : http_sink();
  }
  const int n = argc > 1 ? std::stoi(argv[1]) : 300;
  MeterProvider provider;
  const MetricsSnapshot snapshot = thousand_series(provider);
  const std::size_t bytes = gym::exporters::encode_request(snapshot, OtlpProtocol::grpc).size();

  std::vector<Side> sides;
  sides.push_back({"grpc", OtlpProtocol::grpc, std::make_unique<Sink>("grpc"), nullptr, {}, 0, 0});
  sides.push_back({"http/protobuf",
                   OtlpProtocol::http_protobuf,
                   std::make_unique<Sink>("http"),
                   nullptr,
                   {},
                   0,
                   0});
  for (Side& s : sides) {
    if (s.sink->port <= 0) {
      std::fprintf(stderr, "the %s sink did not start\n", s.name);
      return 1;
    }
    gym::exporters::OtlpSettings settings;
    settings.protocol = s.protocol;
    const std::string base = "http://127.0.0.1:" + std::to_string(s.sink->port);
    settings.url = s.protocol == OtlpProtocol::grpc ? base : base + "/v1/metrics";
    s.exporter = std::make_unique<gym::exporters::OtlpMetricExporter>(settings);
    for (int i = 0; i < 20; ++i)
      s.exporter->export_metrics(snapshot, Clock::now() + std::chrono::seconds(10));
  }
  constexpr int kRound = 10;
  for (int done = 0; done < n; done += kRound) {
    for (Side& s : sides) {
      const double cpu0 = cpu_seconds();
      for (int i = 0; i < kRound; ++i) {
        const auto t0 = Clock::now();
        if (s.exporter->export_metrics(snapshot, Clock::now() + std::chrono::seconds(10)) !=
            ExportResult::success)
          ++s.failures;
        s.wall_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
      s.cpu += cpu_seconds() - cpu0;
    }
  }
  std::printf("payload: %zu bytes of protobuf (1000 series), %d exports per protocol\n", bytes, n);
  for (Side& s : sides) {
    std::sort(s.wall_us.begin(), s.wall_us.end());
    const auto at = [&](double q) {
      return s.wall_us[static_cast<std::size_t>(q * static_cast<double>(s.wall_us.size() - 1))];
    };
    std::printf(
        "%-14s wall per export: p50 %.0f us, p90 %.0f us; process CPU per export %.0f us; "
        "failures %d\n",
        s.name, at(0.5), at(0.9), s.cpu * 1e6 / static_cast<double>(s.wall_us.size()), s.failures);
  }
  return 0;
}
