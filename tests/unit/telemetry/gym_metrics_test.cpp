// The gym_metrics facade (docs/design/telemetry-contract.md#metrics): which instruments each role
// creates, their exact names, units, kinds, value types and buckets, and the semantics its
// recorders implement.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "telemetry/metrics/gym_metrics.h"
#include "telemetry/metrics/meter_provider.h"
#include "telemetry_test_support.h"

namespace gym::telemetry {
namespace {

using testing::find_histogram_point;
using testing::find_metric;

// Records one value through every recorder; a role without an instrument ignores the call.
void record_everything(GymMetrics& m) {
  m.record_rollout(120);
  m.record_verify(3, true);
  m.set_servers_active(4);
  m.record_token_contiguity_break();
  m.http_request_series("/run", "POST", 200).record(0.02);
  m.active_request_series("127.0.0.1:9000", "POST").add(1);
  auto* d = m.pool_destination("policy_model");
  d->acquisition_started();
  d->wait_finished(QueueConstraint::per_host, QueueOutcome::ok, 0.3);
}

std::set<std::string> names_of(const MetricsSnapshot& s) {
  std::set<std::string> out;
  for (const auto& m : s.metrics) out.insert(m.descriptor.name);
  return out;
}

TEST(GymMetrics, EachRoleCreatesExactlyItsInstruments) {
  const std::set<std::string> pool = {"gym.http.connection_pool.queue_duration_ms",
                                      "gym.http.connection_pool.connect_total"};
  const std::set<std::string> http = {"http.server.request.duration",
                                      "http.server.active_requests"};
  auto with = [](std::set<std::string> a, const std::set<std::string>& b,
                 std::initializer_list<std::string> extra = {}) {
    a.insert(b.begin(), b.end());
    a.insert(extra.begin(), extra.end());
    return a;
  };
  const std::map<ProcessRole, std::set<std::string>> expected = {
      {ProcessRole::orchestrator, with(pool, {}, {"gym.servers.active"})},
      {ProcessRole::collector, pool},
      {ProcessRole::agent_server, with(pool, http, {"gym.rollout.duration_ms"})},
      {ProcessRole::resources_server,
       with(pool, http, {"gym.verify.duration_ms", "gym.verify.success_rate"})},
      {ProcessRole::model_server, with(pool, http, {"gym.model.token_contiguity.breaks"})},
  };
  for (const auto& [role, names] : expected) {
    MeterProvider provider;
    GymMetrics metrics(provider, role);
    record_everything(metrics);
    EXPECT_EQ(names_of(provider.collect()), names) << "role " << static_cast<int>(role);
  }
}

TEST(GymMetrics, NamesUnitsKindsAndBucketsAreTheCatalogue) {
  struct Row {
    InstrumentKind kind;
    ValueType type;
    std::string unit;
    std::vector<double> bounds;
  };
  const std::map<std::string, Row> catalogue = {
      {"gym.rollout.duration_ms",
       {InstrumentKind::histogram,
        ValueType::float64,
        "ms",
        {100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1200000,
         1800000, 3600000}}},
      {"gym.verify.duration_ms",
       {InstrumentKind::histogram,
        ValueType::float64,
        "ms",
        {0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000}}},
      {"gym.verify.success_rate", {InstrumentKind::gauge, ValueType::float64, "", {}}},
      {"gym.servers.active", {InstrumentKind::gauge, ValueType::int64, "", {}}},
      {"gym.http.connection_pool.queue_duration_ms",
       {InstrumentKind::histogram,
        ValueType::float64,
        "ms",
        {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 5000, 30000}}},
      {"gym.http.connection_pool.connect_total",
       {InstrumentKind::observable_counter, ValueType::int64, "{connection}", {}}},
      {"http.server.request.duration",
       {InstrumentKind::histogram,
        ValueType::float64,
        "s",
        {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}}},
      {"http.server.active_requests",
       {InstrumentKind::up_down_counter, ValueType::int64, "{request}", {}}},
      {"gym.model.token_contiguity.breaks",
       {InstrumentKind::counter, ValueType::int64, "{break}", {}}},
  };
  std::set<std::string> seen;
  for (auto role : {ProcessRole::orchestrator, ProcessRole::agent_server,
                    ProcessRole::resources_server, ProcessRole::model_server}) {
    MeterProvider provider;
    GymMetrics metrics(provider, role);
    record_everything(metrics);
    for (const auto& m : provider.collect().metrics) {
      auto it = catalogue.find(m.descriptor.name);
      ASSERT_NE(it, catalogue.end()) << m.descriptor.name;
      EXPECT_EQ(m.descriptor.kind, it->second.kind) << m.descriptor.name;
      EXPECT_EQ(m.descriptor.value_type, it->second.type) << m.descriptor.name;
      EXPECT_EQ(m.descriptor.unit, it->second.unit) << m.descriptor.name;
      EXPECT_EQ(m.descriptor.bounds, it->second.bounds) << m.descriptor.name;
      seen.insert(m.descriptor.name);
    }
  }
  EXPECT_EQ(seen.size(), catalogue.size());
}

TEST(GymMetrics, TokenContiguityBreaksCountFromTheFirstBreak) {
  MeterProvider provider;
  GymMetrics metrics(provider, ProcessRole::model_server);
  EXPECT_EQ(find_metric(provider.collect(), "gym.model.token_contiguity.breaks"), nullptr)
      << "no point exists before the first break";
  metrics.record_token_contiguity_break();
  metrics.record_token_contiguity_break();
  const auto s = provider.collect();
  const auto* breaks = find_metric(s, "gym.model.token_contiguity.breaks");
  ASSERT_NE(breaks, nullptr);
  EXPECT_EQ(std::get<std::int64_t>(breaks->number_points().at(0).value), 2);
}

TEST(GymMetrics, VerifySuccessRateCountsCompletedCallsNotRewards) {
  MeterProvider provider;
  GymMetrics metrics(provider, ProcessRole::resources_server);
  EXPECT_EQ(find_metric(provider.collect(), "gym.verify.success_rate"), nullptr)
      << "no point exists before the first /verify";
  metrics.record_verify(2, true);   // reward 1.0
  metrics.record_verify(2, true);   // a wrong answer scored 0.0 is still a completed verification
  metrics.record_verify(2, false);  // the verifier threw
  metrics.record_verify(2, true);
  auto s = provider.collect();
  const auto* rate = find_metric(s, "gym.verify.success_rate");
  ASSERT_NE(rate, nullptr);
  EXPECT_DOUBLE_EQ(std::get<double>(rate->number_points().at(0).value), 0.75);
  const auto* duration = find_metric(s, "gym.verify.duration_ms");
  ASSERT_NE(duration, nullptr);
  EXPECT_EQ(duration->histogram_points().at(0).count, 4u) << "failed calls are samples too";
}

TEST(GymMetrics, HttpRequestAttributesAndTheMissingRoute) {
  MeterProvider provider;
  GymMetrics metrics(provider, ProcessRole::model_server);
  metrics.http_request_series("/v1/responses", "POST", 200).record(0.004);
  metrics.http_request_series("", "GET", 404).record(0.001);
  auto s = provider.collect();
  const auto* m = find_metric(s, "http.server.request.duration");
  ASSERT_NE(m, nullptr);
  EXPECT_NE(find_histogram_point(*m, AttributeSet{{"http.route", "/v1/responses"},
                                                  {"http.request.method", "POST"},
                                                  {"http.response.status_code", 200}}),
            nullptr);
  EXPECT_NE(find_histogram_point(*m, AttributeSet{{"http.request.method", "GET"},
                                                  {"http.response.status_code", 404}}),
            nullptr)
      << "no http.route attribute when no route matched";
}

TEST(GymMetrics, ActiveRequestsReturnToZeroPerServerNameAndMethod) {
  MeterProvider provider;
  GymMetrics metrics(provider, ProcessRole::agent_server);
  metrics.active_request_series("127.0.0.1:1", "POST").add(1);
  metrics.active_request_series("127.0.0.1:1", "POST").add(1);
  metrics.active_request_series("", "GET").add(1);
  auto during = provider.collect();
  EXPECT_EQ(testing::int_value(during, "http.server.active_requests",
                               {{"http.server_name", "127.0.0.1:1"}, {"http.method", "POST"}}),
            2);
  EXPECT_EQ(testing::int_value(during, "http.server.active_requests", {{"http.method", "GET"}}), 1);
  metrics.active_request_series("127.0.0.1:1", "POST").add(-1);
  metrics.active_request_series("127.0.0.1:1", "POST").add(-1);
  metrics.active_request_series("", "GET").add(-1);
  auto after = provider.collect();
  EXPECT_EQ(testing::int_value(after, "http.server.active_requests",
                               {{"http.server_name", "127.0.0.1:1"}, {"http.method", "POST"}}),
            0);
}

TEST(GymMetrics, PoolDestinationsCountAcquisitionsAndClassifyWaits) {
  MeterProvider provider;
  GymMetrics metrics(provider, ProcessRole::collector);
  auto* agent = metrics.pool_destination("mcqa_simple_agent");
  EXPECT_EQ(metrics.pool_destination("mcqa_simple_agent"), agent) << "one entry per name";
  auto* external = metrics.pool_destination("external");
  for (int i = 0; i < 10; ++i) agent->acquisition_started();
  external->acquisition_started();
  agent->wait_finished(QueueConstraint::per_host, QueueOutcome::ok, 0.2);
  agent->wait_finished(QueueConstraint::per_host, QueueOutcome::ok, 0.7);
  agent->wait_finished(QueueConstraint::total, QueueOutcome::abandoned, 40);
  auto s = provider.collect();
  EXPECT_EQ(testing::int_value(s, "gym.http.connection_pool.connect_total",
                               {{"nemo.gym.http.destination.server.name", "mcqa_simple_agent"}}),
            10);
  EXPECT_EQ(testing::int_value(s, "gym.http.connection_pool.connect_total",
                               {{"nemo.gym.http.destination.server.name", "external"}}),
            1);
  const auto* q = find_metric(s, "gym.http.connection_pool.queue_duration_ms");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->histogram_points().size(), 2u) << "series without samples are not exported";
  const auto* ok = find_histogram_point(
      *q, AttributeSet{{"nemo.gym.http.connection_pool.queue_constraint", "per_host"},
                       {"nemo.gym.http.connection_pool.queue_outcome", "ok"},
                       {"nemo.gym.http.destination.server.name", "mcqa_simple_agent"}});
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->count, 2u);
  EXPECT_DOUBLE_EQ(ok->sum, 0.9);
  const auto* abandoned = find_histogram_point(
      *q, AttributeSet{{"nemo.gym.http.connection_pool.queue_constraint", "total"},
                       {"nemo.gym.http.connection_pool.queue_outcome", "abandoned"},
                       {"nemo.gym.http.destination.server.name", "mcqa_simple_agent"}});
  ASSERT_NE(abandoned, nullptr);
  EXPECT_EQ(abandoned->count, 1u);
}

TEST(GymMetrics, DisabledProviderRecordsNothing) {
  MeterProviderOptions off;
  off.enabled = false;
  MeterProvider provider(std::move(off));
  GymMetrics metrics(provider, ProcessRole::resources_server);
  EXPECT_FALSE(metrics.enabled());
  record_everything(metrics);
  EXPECT_TRUE(provider.collect().metrics.empty());
}

TEST(GymMetrics, MethodLabels) {
  for (const char* m :
       {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"})
    EXPECT_EQ(http_method_label(m), m);
  EXPECT_EQ(http_method_label("get"), "_OTHER") << "methods are case-sensitive";
  EXPECT_EQ(http_method_label("PROPFIND"), "_OTHER");
  EXPECT_EQ(http_method_label(""), "_OTHER");
}

TEST(GymMetrics, RolesOfServerTypes) {
  EXPECT_EQ(role_of_server_type("resources_servers"), ProcessRole::resources_server);
  EXPECT_EQ(role_of_server_type("responses_api_agents"), ProcessRole::agent_server);
  EXPECT_EQ(role_of_server_type("responses_api_models"), ProcessRole::model_server);
  EXPECT_EQ(role_of_server_type("orchestrator"), std::nullopt);
}

}  // namespace
}  // namespace gym::telemetry
