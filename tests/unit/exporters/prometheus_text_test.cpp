// Snapshot -> Prometheus text 0.0.4 (docs/reference/telemetry.md#name-conversion): every name and
// unit rule, label conversion and escaping, histogram buckets, target_info, families, numbers and
// the locale.
#include "exporters/prometheus/prometheus_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <locale>

namespace gym::exporters {
namespace {

using namespace telemetry;

InstrumentDescriptor desc(std::string name, std::string unit, InstrumentKind kind) {
  InstrumentDescriptor d;
  d.name = std::move(name);
  d.unit = std::move(unit);
  d.kind = kind;
  return d;
}

constexpr auto kCounter = InstrumentKind::counter;
constexpr auto kUpDown = InstrumentKind::up_down_counter;
constexpr auto kHistogram = InstrumentKind::histogram;
constexpr auto kGauge = InstrumentKind::gauge;
constexpr auto kObsCounter = InstrumentKind::observable_counter;
constexpr auto kObsGauge = InstrumentKind::observable_gauge;

std::string name_of(std::string name, std::string unit, InstrumentKind kind) {
  return prometheus_metric_name(desc(std::move(name), std::move(unit), kind));
}

TEST(PrometheusNames, TheTableOfTelemetryMd75) {
  EXPECT_EQ(name_of("gym.rollout.duration_ms", "ms", kHistogram),
            "gym_rollout_duration_ms_milliseconds");
  EXPECT_EQ(name_of("gym.verify.duration_ms", "ms", kHistogram),
            "gym_verify_duration_ms_milliseconds");
  EXPECT_EQ(name_of("gym.verify.success_rate", "", kGauge), "gym_verify_success_rate");
  EXPECT_EQ(name_of("gym.servers.active", "", kGauge), "gym_servers_active");
  EXPECT_EQ(name_of("gym.http.connection_pool.queue_duration_ms", "ms", kHistogram),
            "gym_http_connection_pool_queue_duration_ms_milliseconds");
  EXPECT_EQ(name_of("gym.http.connection_pool.connect_total", "{connection}", kObsCounter),
            "gym_http_connection_pool_connect_total");
  EXPECT_EQ(name_of("gym.server.memory.usage", "By", kObsGauge), "gym_server_memory_usage_bytes");
  EXPECT_EQ(name_of("gym.server.memory.sampled_peak", "By", kGauge),
            "gym_server_memory_sampled_peak_bytes");
  EXPECT_EQ(name_of("gym.server.processes", "{process}", kGauge), "gym_server_processes");
  EXPECT_EQ(name_of("gym.host.memory.usage", "By", kGauge), "gym_host_memory_usage_bytes");
  EXPECT_EQ(name_of("gym.host.memory.available", "By", kGauge), "gym_host_memory_available_bytes");
  EXPECT_EQ(name_of("gym.host.memory.total", "By", kGauge), "gym_host_memory_total_bytes");
  EXPECT_EQ(name_of("gym.host.memory.sampled_peak", "By", kGauge),
            "gym_host_memory_sampled_peak_bytes");
  EXPECT_EQ(name_of("http.server.request.duration", "s", kHistogram),
            "http_server_request_duration_seconds");
  EXPECT_EQ(name_of("http.server.active_requests", "{request}", kUpDown),
            "http_server_active_requests");
}

TEST(PrometheusNames, InvalidCharactersBecomeOneUnderscore) {
  EXPECT_EQ(name_of("a-b/c.d", "", kGauge), "a_b_c_d");
  EXPECT_EQ(name_of("a..b__c", "", kGauge), "a_b_c");
  EXPECT_EQ(name_of("Mixed.Case", "", kGauge), "Mixed_Case");
}

TEST(PrometheusNames, MonotonicCountersEndInTotalExactlyOnce) {
  EXPECT_EQ(name_of("requests", "", kCounter), "requests_total");
  EXPECT_EQ(name_of("requests", "", kObsCounter), "requests_total");
  EXPECT_EQ(name_of("x_total", "", kCounter), "x_total");
  EXPECT_EQ(name_of("x.total", "", kCounter), "x_total");
  EXPECT_EQ(name_of("x_total", "{request}", kObsCounter), "x_total");
  // The unit goes before `_total`.
  EXPECT_EQ(name_of("cpu.time_total", "s", kCounter), "cpu_time_seconds_total");
  EXPECT_EQ(name_of("cpu.time", "s", kCounter), "cpu_time_seconds_total");
  EXPECT_EQ(name_of("cpu_seconds_total", "s", kCounter), "cpu_seconds_total");
  // `subtotal` is not a `_total` suffix.
  EXPECT_EQ(name_of("subtotal", "", kCounter), "subtotal_total");
  // Non-monotonic sums and gauges never get `_total` and keep a `_total` they have.
  EXPECT_EQ(name_of("queue.size", "", kUpDown), "queue_size");
  EXPECT_EQ(name_of("x_total", "", kUpDown), "x_total");
  EXPECT_EQ(name_of("x_total", "", kGauge), "x_total");
}

TEST(PrometheusNames, UnitSuffixIsNotDoubled) {
  EXPECT_EQ(name_of("latency_seconds", "s", kHistogram), "latency_seconds");
  EXPECT_EQ(name_of("latency.seconds", "s", kHistogram), "latency_seconds");
  EXPECT_EQ(name_of("wait_milliseconds", "ms", kHistogram), "wait_milliseconds");
  EXPECT_EQ(name_of("bytes", "By", kGauge), "bytes");
  // `_ms` is not `_milliseconds`: the unit is appended
  // (docs/reference/telemetry.md#name-conversion).
  EXPECT_EQ(name_of("wait_ms", "ms", kHistogram), "wait_ms_milliseconds");
  // A word merely ending in the unit text is not the suffix.
  EXPECT_EQ(name_of("microseconds", "s", kGauge), "microseconds_seconds");
}

TEST(PrometheusNames, UnitsInBracesAndEmptyUnitsAddNothing) {
  EXPECT_EQ(name_of("a", "{request}", kGauge), "a");
  EXPECT_EQ(name_of("a", "{}", kGauge), "a");
  EXPECT_EQ(name_of("a", "", kHistogram), "a");
  EXPECT_EQ(name_of("a", "{packet}/s", kGauge), "a_per_second");
  EXPECT_EQ(name_of("a", "By{compressed}", kGauge), "a_bytes");
}

TEST(PrometheusNames, UnitTable) {
  struct Case {
    const char* unit;
    InstrumentKind kind;
    const char* suffix;
  };
  const Case cases[] = {
      {"d", kGauge, "days"},
      {"h", kGauge, "hours"},
      {"min", kGauge, "minutes"},
      {"s", kGauge, "seconds"},
      {"ms", kGauge, "milliseconds"},
      {"us", kGauge, "microseconds"},
      {"ns", kGauge, "nanoseconds"},
      {"By", kGauge, "bytes"},
      {"KiBy", kGauge, "kibibytes"},
      {"MiBy", kGauge, "mebibytes"},
      {"GiBy", kGauge, "gibibytes"},
      {"TiBy", kGauge, "tibibytes"},
      {"KBy", kGauge, "kilobytes"},
      {"MBy", kGauge, "megabytes"},
      {"GBy", kGauge, "gigabytes"},
      {"TBy", kGauge, "terabytes"},
      {"bit", kGauge, "bits"},
      {"m", kGauge, "meters"},
      {"V", kGauge, "volts"},
      {"A", kGauge, "amperes"},
      {"J", kGauge, "joules"},
      {"W", kGauge, "watts"},
      {"g", kGauge, "grams"},
      {"Cel", kGauge, "celsius"},
      {"Hz", kGauge, "hertz"},
      {"%", kGauge, "percent"},
      {"1", kGauge, "ratio"},
      {"1", kObsGauge, "ratio"},
      {"1", kCounter, ""},
      {"1", kHistogram, ""},
      {"By/s", kGauge, "bytes_per_second"},
      {"m/s", kGauge, "meters_per_second"},
      {"1/s", kCounter, "per_second"},
      {"{request}/min", kGauge, "per_minute"},
      {"By/h", kGauge, "bytes_per_hour"},
      {"widgets", kGauge, "widgets"},
      {"foo.bar", kGauge, "foo_bar"},
      {"{request}", kCounter, ""},
      {"", kCounter, ""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(prometheus_unit_suffix(c.unit, c.kind), c.suffix) << c.unit;
  }
}

TEST(PrometheusLabels, AttributeKeysConvertLikeNames) {
  EXPECT_EQ(prometheus_label_name("nemo.gym.http.destination.server.name"),
            "nemo_gym_http_destination_server_name");
  EXPECT_EQ(prometheus_label_name("memory.type"), "memory_type");
  EXPECT_EQ(prometheus_label_name("http.response.status_code"), "http_response_status_code");
  EXPECT_EQ(prometheus_label_name("0day"), "key_0day");
  EXPECT_EQ(prometheus_label_name("a-b..c"), "a_b_c");
}

TEST(PrometheusNumbers, SpelledAsPrometheusParsesThem) {
  EXPECT_EQ(prometheus_number(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(prometheus_number(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(prometheus_number(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(prometheus_number(0.1), "0.1");
  EXPECT_EQ(prometheus_number(1.0), "1");
  EXPECT_EQ(prometheus_number(-2.5), "-2.5");
  EXPECT_EQ(prometheus_number(1e21), "1e+21");
  EXPECT_EQ(prometheus_number(1.5e-7), "1.5e-07");
  EXPECT_EQ(prometheus_number(0.005), "0.005");
  // Round trip at full precision.
  const double third = 1.0 / 3.0;
  EXPECT_EQ(std::stod(prometheus_number(third)), third);
}

MetricData number_metric(InstrumentDescriptor d, std::vector<NumberPoint> points) {
  MetricData m;
  m.descriptor = std::move(d);
  m.points = std::move(points);
  return m;
}

MetricsSnapshot snapshot_of(std::vector<MetricData> metrics, AttributeSet resource = {}) {
  MetricsSnapshot s;
  s.resource.attributes = std::move(resource);
  s.scope = {"gym-cpp", "0.1.0"};
  s.metrics = std::move(metrics);
  return s;
}

// Exact output for one instrument of each export type.
TEST(PrometheusText, RendersEveryKindExactly) {
  auto counter = desc("test.requests", "{request}", kCounter);
  counter.description = "Requests handled";
  auto hist = desc("gym.verify.duration_ms", "ms", kHistogram);
  hist.bounds = {0.5, 1, 2.5};
  MetricData h;
  h.descriptor = hist;
  h.points = std::vector<HistogramPoint>{HistogramPoint{
      AttributeSet{{"nemo.gym.server.name", "mcqa"}}, 4, 74.5, 0.5, 70, {1, 1, 0, 2}}};
  auto snapshot = snapshot_of(
      {number_metric(counter, {NumberPoint{AttributeSet{{"http.route", "/run"},
                                                        {"ok", true},
                                                        {"http.response.status_code", 200}},
                                           std::int64_t{7}}}),
       number_metric(desc("http.server.active_requests", "{request}", kUpDown),
                     {NumberPoint{AttributeSet{{"http.method", "GET"}}, std::int64_t{-1}}}),
       number_metric(desc("gym.verify.success_rate", "", kGauge), {NumberPoint{{}, 0.75}}),
       number_metric(desc("gym.host.memory.total", "By", kObsGauge),
                     {NumberPoint{{}, std::int64_t{1} << 40}}),
       h},
      AttributeSet{{"service.name", "nemo-gym/mcqa"}, {"process.pid", 41237}});

  const std::string expected =
      "# HELP target_info Target metadata\n"
      "# TYPE target_info gauge\n"
      "target_info{process_pid=\"41237\",service_name=\"nemo-gym/mcqa\"} 1\n"
      "# HELP test_requests_total Requests handled\n"
      "# TYPE test_requests_total counter\n"
      "test_requests_total{http_response_status_code=\"200\",http_route=\"/run\",ok=\"true\","
      "otel_scope_name=\"gym-cpp\",otel_scope_version=\"0.1.0\"} 7\n"
      "# HELP http_server_active_requests http.server.active_requests\n"
      "# TYPE http_server_active_requests gauge\n"
      "http_server_active_requests{http_method=\"GET\",otel_scope_name=\"gym-cpp\","
      "otel_scope_version=\"0.1.0\"} -1\n"
      "# HELP gym_verify_success_rate gym.verify.success_rate\n"
      "# TYPE gym_verify_success_rate gauge\n"
      "gym_verify_success_rate{otel_scope_name=\"gym-cpp\",otel_scope_version=\"0.1.0\"} 0.75\n"
      "# HELP gym_host_memory_total_bytes gym.host.memory.total\n"
      "# TYPE gym_host_memory_total_bytes gauge\n"
      "gym_host_memory_total_bytes{otel_scope_name=\"gym-cpp\",otel_scope_version=\"0.1.0\"} "
      "1099511627776\n"
      "# HELP gym_verify_duration_ms_milliseconds gym.verify.duration_ms\n"
      "# TYPE gym_verify_duration_ms_milliseconds histogram\n"
      "gym_verify_duration_ms_milliseconds_bucket{nemo_gym_server_name=\"mcqa\","
      "otel_scope_name=\"gym-cpp\",otel_scope_version=\"0.1.0\",le=\"0.5\"} 1\n"
      "gym_verify_duration_ms_milliseconds_bucket{nemo_gym_server_name=\"mcqa\","
      "otel_scope_name=\"gym-cpp\",otel_scope_version=\"0.1.0\",le=\"1\"} 2\n"
      "gym_verify_duration_ms_milliseconds_bucket{nemo_gym_server_name=\"mcqa\","
      "otel_scope_name=\"gym-cpp\",otel_scope_version=\"0.1.0\",le=\"2.5\"} 2\n"
      "gym_verify_duration_ms_milliseconds_bucket{nemo_gym_server_name=\"mcqa\","
      "otel_scope_name=\"gym-cpp\",otel_scope_version=\"0.1.0\",le=\"+Inf\"} 4\n"
      "gym_verify_duration_ms_milliseconds_sum{nemo_gym_server_name=\"mcqa\","
      "otel_scope_name=\"gym-cpp\",otel_scope_version=\"0.1.0\"} 74.5\n"
      "gym_verify_duration_ms_milliseconds_count{nemo_gym_server_name=\"mcqa\","
      "otel_scope_name=\"gym-cpp\",otel_scope_version=\"0.1.0\"} 4\n";
  EXPECT_EQ(render_prometheus_text(snapshot), expected);
}

TEST(PrometheusText, HistogramBucketsAreCumulativeAndEndInInf) {
  auto d = desc("http.server.request.duration", "s", kHistogram);
  d.bounds = {0.005, 0.01, 0.025};
  MetricData h;
  h.descriptor = d;
  h.points = std::vector<HistogramPoint>{HistogramPoint{{}, 10, 1.25, 0, 1, {3, 0, 5, 2}},
                                         HistogramPoint{{{"k", "v"}}, 0, 0, 0, 0, {0, 0, 0, 0}}};
  const std::string text = render_prometheus_text(snapshot_of({h}));
  const std::string scope = "otel_scope_name=\"gym-cpp\",otel_scope_version=\"0.1.0\"";
  const std::string n = "http_server_request_duration_seconds";
  for (const std::string& line :
       {n + "_bucket{" + scope + ",le=\"0.005\"} 3\n", n + "_bucket{" + scope + ",le=\"0.01\"} 3\n",
        n + "_bucket{" + scope + ",le=\"0.025\"} 8\n",
        n + "_bucket{" + scope + ",le=\"+Inf\"} 10\n", n + "_sum{" + scope + "} 1.25\n",
        n + "_count{" + scope + "} 10\n", n + "_bucket{k=\"v\"," + scope + ",le=\"+Inf\"} 0\n",
        n + "_count{k=\"v\"," + scope + "} 0\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\nin:\n" << text;
  // One HELP and one TYPE for the family, whatever the number of series.
  EXPECT_EQ(text.find("# TYPE " + n + " histogram\n"), text.rfind("# TYPE " + n + " "));
  EXPECT_NE(text.find("# HELP " + n + " "), std::string::npos);
}

TEST(PrometheusText, LabelValuesAreEscaped) {
  auto text = render_prometheus_text(snapshot_of({number_metric(
      desc("g", "", kGauge), {NumberPoint{{{"path", "a\\b\"c\nd"}}, std::int64_t{1}}})}));
  EXPECT_NE(text.find("g{path=\"a\\\\b\\\"c\\nd\","), std::string::npos) << text;
}

TEST(PrometheusText, HelpTextIsEscaped) {
  auto d = desc("g", "", kGauge);
  d.description = "line one\nback\\slash \"quoted\"";
  auto text = render_prometheus_text(snapshot_of({number_metric(d, {NumberPoint{{}, 1.0}})}));
  EXPECT_NE(text.find("# HELP g line one\\nback\\\\slash \"quoted\"\n"), std::string::npos) << text;
}

TEST(PrometheusText, AttributeValuesOfEveryType) {
  auto text = render_prometheus_text(snapshot_of({number_metric(
      desc("g", "", kGauge),
      {NumberPoint{{{"s", "x"}, {"b", false}, {"i", -3}, {"d", 0.25}}, std::int64_t{1}}})}));
  EXPECT_NE(text.find("g{b=\"false\",d=\"0.25\",i=\"-3\",s=\"x\",otel_scope_name"),
            std::string::npos)
      << text;
}

TEST(PrometheusText, KeysConvertingToOneLabelAreJoined) {
  // "a.b" sorts before "a_b": values joined in key order.
  auto text = render_prometheus_text(snapshot_of({number_metric(
      desc("g", "", kGauge), {NumberPoint{{{"a_b", "y"}, {"a.b", "x"}}, std::int64_t{1}}})}));
  EXPECT_NE(text.find("g{a_b=\"x;y\",otel_scope_name"), std::string::npos) << text;
}

TEST(PrometheusText, ReservedLabelsWin) {
  auto d = desc("h", "", kHistogram);
  d.bounds = {1};
  MetricData h;
  h.descriptor = d;
  h.points = std::vector<HistogramPoint>{HistogramPoint{
      {{"le", "mine"}, {"otel.scope.name", "fake"}, {"k", "v"}}, 1, 1, 1, 1, {1, 0}}};
  auto text = render_prometheus_text(snapshot_of({h}));
  EXPECT_EQ(text.find("mine"), std::string::npos) << text;
  EXPECT_EQ(text.find("fake"), std::string::npos) << text;
  EXPECT_NE(text.find("h_bucket{k=\"v\",otel_scope_name=\"gym-cpp\",otel_scope_version=\"0.1.0\","
                      "le=\"1\"} 1\n"),
            std::string::npos)
      << text;
}

TEST(PrometheusText, TargetInfoOnceWithoutScopeLabels) {
  auto text = render_prometheus_text(
      snapshot_of({number_metric(desc("a", "", kGauge), {NumberPoint{{}, 1.0}}),
                   number_metric(desc("b", "", kGauge), {NumberPoint{{}, 2.0}})},
                  AttributeSet{{"service.name", "nemo-gym/orchestrator"},
                               {"nemo.gym.server.type", "orchestrator"},
                               {"nv.dl.world_size", 1}}));
  const std::string line =
      "target_info{nemo_gym_server_type=\"orchestrator\",nv_dl_world_size=\"1\","
      "service_name=\"nemo-gym/orchestrator\"} 1\n";
  EXPECT_EQ(text.find("# HELP target_info Target metadata\n# TYPE target_info gauge\n" + line), 0u)
      << text;
  EXPECT_EQ(text.find("target_info{"), text.rfind("target_info{"));
  // No resource, no target_info.
  EXPECT_EQ(render_prometheus_text(snapshot_of({})).find("target_info"), std::string::npos);
}

TEST(PrometheusText, MetricsWithOneNameShareAFamily) {
  std::vector<std::string> conflicts;
  auto text = render_prometheus_text(
      snapshot_of({number_metric(desc("a.b", "", kGauge), {NumberPoint{{{"k", "1"}}, 1.0}}),
                   number_metric(desc("a_b", "", kGauge), {NumberPoint{{{"k", "2"}}, 2.0}}),
                   number_metric(desc("a-b", "", kCounter), {NumberPoint{{}, 3.0}}),
                   number_metric(desc("c", "", kCounter), {NumberPoint{{}, std::int64_t{4}}}),
                   number_metric(desc("c_total", "", kCounter), {NumberPoint{{{"x", "y"}}, 5.0}}),
                   number_metric(desc("target.info", "", kGauge), {NumberPoint{{}, 1.0}})}),
      &conflicts);
  EXPECT_EQ(text.find("# TYPE a_b gauge\n"), text.rfind("# TYPE a_b gauge\n"));
  EXPECT_NE(text.find("a_b{k=\"1\","), std::string::npos);
  EXPECT_NE(text.find("a_b{k=\"2\","), std::string::npos);
  // a-b is a counter: its name is a_b_total, a family of its own.
  EXPECT_NE(text.find("# TYPE a_b_total counter\na_b_total{"), std::string::npos) << text;
  // c and c_total are both counters named c_total: one family, two series.
  EXPECT_EQ(text.find("# TYPE c_total counter\n"), text.rfind("# TYPE c_total counter\n"));
  EXPECT_NE(text.find("c_total{x=\"y\","), std::string::npos);
  EXPECT_EQ(conflicts, std::vector<std::string>{"target.info"});
  EXPECT_EQ(text.find("target_info"), std::string::npos);

  conflicts.clear();
  text = render_prometheus_text(
      snapshot_of(
          {number_metric(desc("q", "", kGauge), {NumberPoint{{}, 1.0}}),
           number_metric(desc("q", "", kUpDown), {NumberPoint{{{"k", "u"}}, std::int64_t{2}}}),
           number_metric(desc("q_total", "", kUpDown), {NumberPoint{{}, 7.0}}),
           number_metric(desc("q", "", kCounter), {NumberPoint{{}, 3.0}})}),
      &conflicts);
  // gauge and up-down counter are both `gauge` families: shared. q_total (gauge) and the counter
  // q (q_total, counter) clash: the later one is left out.
  EXPECT_NE(text.find("q{k=\"u\",otel_scope_name=\"gym-cpp\",otel_scope_version=\"0.1.0\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(conflicts, std::vector<std::string>{"q"});
  EXPECT_NE(text.find("# TYPE q_total gauge\n"), std::string::npos);
  EXPECT_EQ(text.find("q_total counter"), std::string::npos);
}

TEST(PrometheusText, SampleValuesNaNAndInfinities) {
  auto text = render_prometheus_text(snapshot_of(
      {number_metric(desc("g", "", kGauge),
                     {NumberPoint{{{"k", "nan"}}, std::numeric_limits<double>::quiet_NaN()},
                      NumberPoint{{{"k", "inf"}}, std::numeric_limits<double>::infinity()},
                      NumberPoint{{{"k", "-inf"}}, -std::numeric_limits<double>::infinity()},
                      NumberPoint{{{"k", "min"}}, std::numeric_limits<std::int64_t>::min()}})}));
  EXPECT_NE(
      text.find("g{k=\"nan\",otel_scope_name=\"gym-cpp\",otel_scope_version=\"0.1.0\"} NaN\n"),
      std::string::npos);
  EXPECT_NE(text.find("0.1.0\"} +Inf\n"), std::string::npos);
  EXPECT_NE(text.find("0.1.0\"} -Inf\n"), std::string::npos);
  EXPECT_NE(text.find("0.1.0\"} -9223372036854775808\n"), std::string::npos);
}

// A comma-decimal, digit-grouping global locale must not change a byte.
struct CommaDecimal : std::numpunct<char> {
  char do_decimal_point() const override { return ','; }
  char do_thousands_sep() const override { return '.'; }
  std::string do_grouping() const override { return "\3"; }
};

TEST(PrometheusText, OutputDoesNotDependOnTheLocale) {
  auto d = desc("h", "s", kHistogram);
  d.bounds = {0.005, 2.5, 10000};
  MetricData h;
  h.descriptor = d;
  h.points = std::vector<HistogramPoint>{
      HistogramPoint{{{"r", 1.5}}, 1234567, 12345.678, 0, 0, {1, 1234565, 1, 0}}};
  auto snapshot =
      snapshot_of({h, number_metric(desc("g", "", kGauge), {NumberPoint{{}, 1234567.25}})},
                  AttributeSet{{"x", 0.5}});
  const std::string classic = render_prometheus_text(snapshot);
  const std::locale previous =
      std::locale::global(std::locale(std::locale::classic(), new CommaDecimal));
  const std::string comma = render_prometheus_text(snapshot);
  std::locale::global(previous);
  EXPECT_EQ(comma, classic);
  EXPECT_NE(
      classic.find("g{otel_scope_name=\"gym-cpp\",otel_scope_version=\"0.1.0\"} 1234567.25\n"),
      std::string::npos);
  EXPECT_NE(classic.find("h_seconds_sum{r=\"1.5\","), std::string::npos);
}

}  // namespace
}  // namespace gym::exporters
