// The runtime's instrumentation end to end (docs/design/telemetry-contract.md): real `gym`
// processes export to the Node OTLP receiver of tests/support/otlp_receiver.h, which decodes with
// the OpenTelemetry project's own protobuf schema, and every check reads what crossed the wire.
// Deployments come in three shapes: `gym eval run` with its servers (the orchestrator collects),
// `gym env start`, and `gym serve` processes around tests/support/gym_test_server as a failing or
// slow policy model and head server, collected by `gym eval run --no-serve`. The data is the
// project's own demo data (gym_demo_data), so no NeMo Gym data is needed.
//
// Waits are on conditions (an export that shows a count), each with a generous hang guard; nothing
// asserts wall-clock durations. Memory gauges are not covered here.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <boost/json.hpp>

#include "core/yaml_json.h"
#include "demo_data/demo_data.h"
#include "files.h"
#include "otlp_receiver.h"
#include "process.h"
#include "reserved_port.h"
#include "telemetry_recorder.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using gym::test::Attributes;
using gym::test::ChildProcess;
using gym::test::metric_kind;
using gym::test::OtlpReceiver;
using gym::test::point_count;
using gym::test::point_value;
using gym::test::points;
using gym::test::ProcessExport;
using gym::test::read_jsonl;
using gym::test::read_text;
using gym::test::TempDir;
using gym::test::total;
using namespace std::chrono_literals;

// Hang guard of every wait on a condition.
constexpr auto kGuard = std::chrono::seconds(90);

// Names of this file (docs/design/telemetry-contract.md#metrics).
constexpr const char* kRollout = "gym.rollout.duration_ms";
constexpr const char* kVerify = "gym.verify.duration_ms";
constexpr const char* kSuccessRate = "gym.verify.success_rate";
constexpr const char* kServersActive = "gym.servers.active";
constexpr const char* kQueue = "gym.http.connection_pool.queue_duration_ms";
constexpr const char* kConnects = "gym.http.connection_pool.connect_total";
constexpr const char* kHttpDuration = "http.server.request.duration";
constexpr const char* kHttpActive = "http.server.active_requests";
constexpr const char* kConstraint = "nemo.gym.http.connection_pool.queue_constraint";
constexpr const char* kOutcome = "nemo.gym.http.connection_pool.queue_outcome";
constexpr const char* kDestination = "nemo.gym.http.destination.server.name";
constexpr const char* kRoute = "http.route";
constexpr const char* kStatus = "http.response.status_code";

std::string gym_binary() { return gym::test::build_path("src/cli/gym"); }
std::string test_server() { return gym::test::build_path("tests/support/gym_test_server"); }

// Fails the test (never skips) when the receiver did not start: no Node.js, no npm package.
::testing::AssertionResult listening(const OtlpReceiver& receiver) {
  if (receiver.error().empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the OTLP receiver is required: " << receiver.error();
}

std::string agent_of(const json::object& row) {
  return std::string(row.at("agent_ref").at("name").as_string());
}

// The environment of a process that exports metrics to `receiver` every `interval_ms`, over the
// receiver's protocol (http/protobuf for the HTTP receiver: the default protocol is grpc).
std::vector<std::string> telemetry_env(const OtlpReceiver& receiver, int interval_ms) {
  return gym::test::collector_env(receiver.endpoint(), receiver.protocol(), interval_ms);
}

// A `gym` process whose stdout and stderr go to a log file (a collection prints more than a pipe
// holds). The shell execs, so pid() is the gym process itself.
class GymProcess {
 public:
  GymProcess(const std::string& args, std::string log, std::vector<std::string> env)
      : log_(std::move(log)),
        child_({"/bin/sh", "-c", "exec " + gym_binary() + " " + args + " >" + log_ + " 2>&1"},
               std::move(env)) {}
  ~GymProcess() {
    if (child_.running()) {
      child_.signal(SIGTERM);
      if (child_.wait_exit(std::chrono::seconds(30)) == -1) child_.signal(SIGKILL);
    }
  }
  pid_t pid() const { return child_.pid(); }
  int wait_exit(std::chrono::seconds limit = std::chrono::seconds(240)) {
    return child_.wait_exit(limit);
  }
  void signal(int sig) { child_.signal(sig); }
  std::string output() const { return read_text(log_); }
  // Polls the log for `text`; false when the process exits or `limit` passes first.
  bool wait_for(const std::string& text, std::chrono::seconds limit = std::chrono::seconds(90)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (output().find(text) != std::string::npos) return true;
      if (!child_.running()) return output().find(text) != std::string::npos;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

 private:
  std::string log_;
  ChildProcess child_;
};

// Demo data for some of the demo environments: the generated input and recorded rollouts, filtered
// to their agents, as <dir>/<stem>.jsonl and <dir>/<stem>_rollouts.jsonl (where replay_model finds
// them, docs/reference/replay-model.md).
struct Demo {
  std::string input;
  std::vector<gym::demo_data::DemoEnvironment> environments;
  std::vector<json::object> rows;  // the input rows
};

Demo demo_data(const TempDir& tmp, const std::set<std::string>& resources_servers,
               int tasks_per_env) {
  gym::demo_data::DemoOptions options;
  options.tasks_per_env = tasks_per_env;
  const auto data = gym::demo_data::generate(tmp.file("demo"), options);
  Demo out;
  std::set<std::string> agents;
  for (const auto& env : data.environments) {
    if (!resources_servers.count(env.resources_server)) continue;
    out.environments.push_back(env);
    agents.insert(env.agent);
  }
  std::string input, rollouts;
  for (const auto& row : read_jsonl(data.input.string())) {
    if (!agents.count(agent_of(row))) continue;
    input += json::serialize(row) + "\n";
    out.rows.push_back(row);
  }
  for (const auto& row : read_jsonl(data.rollouts.string()))
    if (agents.count(agent_of(row))) rollouts += json::serialize(row) + "\n";
  out.input = tmp.write("demo/subset.jsonl", input);
  tmp.write("demo/subset_rollouts.jsonl", rollouts);
  return out;
}

// The resources server instance of each demo agent (the environments' presets).
const std::map<std::string, std::string> kResourcesOfAgent{
    {"mcqa_simple_agent", "mcqa"},
    {"string_match_simple_agent", "string_match"},
    {"example_multi_step_simple_agent", "example_multi_step_resources_server"},
};

// ---- What the telemetry contract says every metric is
// ---------------------------------------------

struct Descriptor {
  std::string kind;                // sum, gauge, histogram
  std::string unit;                // "" for none
  bool monotonic = false;          // sums only
  std::string value;               // asInt or asDouble (number points)
  std::vector<double> bounds;      // histograms
  std::set<std::string> keys;      // attribute keys every point carries
  std::set<std::string> optional;  // keys a point may carry besides
};

const std::map<std::string, Descriptor>& catalogue() {
  static const std::map<std::string, Descriptor> c{
      {kRollout,
       {"histogram",
        "ms",
        false,
        "",
        {100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1200000,
         1800000, 3600000},
        {},
        {}}},
      {kVerify,
       {"histogram",
        "ms",
        false,
        "",
        {0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000},
        {},
        {}}},
      {kSuccessRate, {"gauge", "", false, "asDouble", {}, {}, {}}},
      {kServersActive, {"gauge", "", false, "asInt", {}, {}, {}}},
      {kQueue,
       {"histogram",
        "ms",
        false,
        "",
        {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 5000, 30000},
        {kConstraint, kOutcome, kDestination},
        {}}},
      {kConnects, {"sum", "{connection}", true, "asInt", {}, {kDestination}, {}}},
      {kHttpDuration,
       {"histogram",
        "s",
        false,
        "",
        {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10},
        {"http.request.method", kStatus},
        {kRoute}}},
      {kHttpActive,
       {"sum", "{request}", false, "asInt", {}, {"http.method"}, {"http.server_name"}}},
  };
  return c;
}

std::vector<double> numbers(const json::value& v) {
  std::vector<double> out;
  if (v.is_array())
    for (const auto& x : v.get_array()) out.push_back(x.to_number<double>());
  return out;
}

std::string text_field(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

// Checks one exported metric against the catalogue: kind, unit, temporality, monotonicity, value
// type, bucket bounds, attribute keys and histogram point consistency.
void check_descriptor(const json::object& metric) {
  const std::string name = text_field(metric, "name");
  SCOPED_TRACE("metric " + name);
  auto it = catalogue().find(name);
  ASSERT_NE(it, catalogue().end())
      << "not in docs/design/telemetry-contract.md#metrics: " << json::serialize(metric);
  const Descriptor& d = it->second;
  ASSERT_EQ(metric_kind(metric), d.kind);
  EXPECT_EQ(text_field(metric, "unit"), d.unit);
  const auto& data = metric.at(d.kind).as_object();
  if (d.kind != "gauge") {
    EXPECT_EQ(data.at("aggregationTemporality").to_number<int>(), 2) << "cumulative";
  }
  if (d.kind == "sum") {
    const auto* m = data.if_contains("isMonotonic");
    EXPECT_EQ(m && m->as_bool(), d.monotonic);
  }
  const auto pts = points(metric);
  EXPECT_FALSE(pts.empty());
  for (const auto* p : pts) {
    const auto attrs =
        gym::test::attribute_map(p->contains("attributes") ? p->at("attributes") : json::value());
    for (const auto& key : d.keys) EXPECT_TRUE(attrs.count(key)) << key << " missing";
    for (const auto& [key, value] : attrs)
      EXPECT_TRUE(d.keys.count(key) || d.optional.count(key)) << "unexpected attribute " << key;
    if (d.kind == "histogram") {
      EXPECT_EQ(numbers(p->at("explicitBounds")), d.bounds);
      const auto& buckets = p->at("bucketCounts").as_array();
      EXPECT_EQ(buckets.size(), d.bounds.size() + 1);
      std::uint64_t sum = 0;
      for (const auto& b : buckets) sum += std::stoull(std::string(b.as_string()));
      EXPECT_EQ(sum, point_count(*p));
      EXPECT_TRUE(p->contains("sum") && p->contains("min") && p->contains("max"));
      if (p->contains("min") && p->contains("max")) {
        EXPECT_LE(p->at("min").to_number<double>(), p->at("max").to_number<double>());
      }
    } else {
      // Proto3 oneof: a 0 value is still present, so a missing field is an encoding bug.
      EXPECT_TRUE(p->contains(d.value)) << json::serialize(*p);
      for (const char* other : {"asInt", "asDouble"}) {
        if (other != d.value) {
          EXPECT_FALSE(p->contains(other)) << json::serialize(*p);
        }
      }
    }
    if (attrs.count(kStatus)) {
      EXPECT_TRUE(attrs.at(kStatus).is_int64()) << "status codes are integers";
    }
  }
}

// The resource of one process (docs/design/telemetry-contract.md#resource-attributes), for `run_id`
// and the expected server type.
void check_resource(const ProcessExport& p, const std::string& run_id, const std::string& type) {
  const std::string name = p.string_attribute("nemo.gym.server.name");
  SCOPED_TRACE("process " + p.instance_id());
  EXPECT_FALSE(name.empty());
  EXPECT_EQ(p.string_attribute("service.name"), "nemo-gym/" + name);
  EXPECT_EQ(p.string_attribute("nemo.gym.service_group"), "nemo-gym");
  EXPECT_EQ(p.string_attribute("nemo.gym.server.type"), type);
  EXPECT_EQ(p.string_attribute("nemo.run.id"), run_id);
  EXPECT_EQ(p.string_attribute("nemo.gym.version"), "0.7.0");
  EXPECT_EQ(p.string_attribute("service.version"), GYM_VERSION);
  EXPECT_EQ(p.string_attribute("telemetry.sdk.name"), "gym-cpp");
  EXPECT_EQ(p.string_attribute("telemetry.sdk.language"), "cpp");
  EXPECT_FALSE(p.string_attribute("host.name").empty());
  ASSERT_TRUE(p.resource.count("process.pid") && p.resource.at("process.pid").is_int64());
  const auto pid = p.resource.at("process.pid").as_int64();
  EXPECT_EQ(p.instance_id(), run_id + "-" + name + "-" + std::to_string(pid));
  ASSERT_TRUE(p.resource.count("nv.dl.rank") && p.resource.count("nv.dl.world_size"));
  EXPECT_EQ(p.resource.at("nv.dl.rank"), json::value(0));
  EXPECT_EQ(p.resource.at("nv.dl.world_size"), json::value(1));
  EXPECT_EQ(p.scope_name, "gym-cpp");
  EXPECT_EQ(p.scope_version, GYM_VERSION);
}

std::int64_t pid_of(const ProcessExport& p) {
  auto it = p.resource.find("process.pid");
  return it != p.resource.end() && it->second.is_int64() ? it->second.as_int64() : -1;
}

// Names no process may ever export (docs/design/telemetry-contract.md#not-exported), and
// gym.servers.active only from the orchestrator.
void check_never_exported(const std::vector<ProcessExport>& all) {
  for (const auto& p : all) {
    for (const auto& name : p.metric_names()) {
      EXPECT_NE(name, "gym.server.request_duration_ms") << p.instance_id();
      std::string lower = name;
      std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
      for (const char* word : {"reward", "accuracy", "score", "pass@", "majority"})
        EXPECT_EQ(lower.find(word), std::string::npos) << name << " in " << p.instance_id();
    }
    if (p.string_attribute("nemo.gym.server.type") != "orchestrator") {
      EXPECT_EQ(p.metric(kServersActive), nullptr) << p.instance_id();
    }
  }
}

// A point's attribute as a string ("" when absent).
std::string attribute(const json::object& point, const std::string& key) {
  const auto attrs = gym::test::attribute_map(point.contains("attributes") ? point.at("attributes")
                                                                           : json::value());
  auto it = attrs.find(key);
  return it != attrs.end() && it->second.is_string() ? std::string(it->second.get_string()) : "";
}

bool has_attribute(const json::object& point, const std::string& key) {
  return gym::test::attribute_map(point.contains("attributes") ? point.at("attributes")
                                                               : json::value())
      .count(key);
}

// The http.route values a process exported.
std::set<std::string> routes(const ProcessExport& p) {
  std::set<std::string> out;
  if (const auto* m = p.metric(kHttpDuration))
    for (const auto* point : points(*m))
      if (has_attribute(*point, kRoute)) out.insert(attribute(*point, kRoute));
  return out;
}

// Every point of `metric` in export `p` matching `filter`, summed (0 without the metric).
double sum_of(const ProcessExport& p, const char* metric, const Attributes& filter = {}) {
  return total(p.metric(metric), filter);
}

std::string instance_id(const std::string& run_id, const std::string& name, pid_t pid) {
  return run_id + "-" + name + "-" + std::to_string(pid);
}

// The last export of each process, by service.instance.id.
std::map<std::string, ProcessExport> last_exports(
    const std::map<std::string, std::vector<ProcessExport>>& by_instance) {
  std::map<std::string, ProcessExport> out;
  for (const auto& [id, list] : by_instance) out.emplace(id, list.back());
  return out;
}

// What the receiver holds, short enough for a failure message: per process its number of exports
// and the totals of its last one (the receiver's raw output runs to megabytes).
std::string summary(const OtlpReceiver& receiver) {
  std::string out = std::to_string(receiver.size()) + " requests answered";
  for (const auto& [id, list] : gym::test::exports_by_instance(receiver.requests())) {
    out += "\n  " + id + ": " + std::to_string(list.size()) + " exports; last:";
    for (const auto& m : list.back().metrics) {
      out += "\n    " + std::string(m.at("name").as_string());
      for (const auto* p : points(m)) {
        out += "\n      ";
        if (const auto* a = p->if_contains("attributes")) {
          for (const auto& [k, v] : gym::test::attribute_map(*a))
            out += k + "=" + json::serialize(v) + " ";
        }
        std::ostringstream value;
        if (metric_kind(m) == "histogram") {
          value << "count " << point_count(*p);
        } else {
          value << "value " << point_value(*p);
        }
        out += value.str();
      }
    }
  }
  return out;
}

int http_status(const std::string& raw) { return gym::test::status_of(raw); }

std::string get(int port, const std::string& path) {
  return gym::test::http_raw(port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
}

std::string post(int port, const std::string& path, const std::string& body) {
  return gym::test::http_raw(port, gym::test::post(path, body), std::chrono::seconds(60));
}

// Waits until GET / on `port` answers (bounded).
bool answers(int port) {
  for (int i = 0; i < 800; ++i) {
    if (http_status(get(port, "/")) > 0) return true;
    std::this_thread::sleep_for(25ms);
  }
  return false;
}

}  // namespace

// ---- a, b: `gym eval run` with servers exports the catalogue from every process -----------------

// Over the receiver's protocol: http/protobuf to the HTTP receiver, grpc to the gRPC one (the
// orchestrator and every server it spawns export over the same one).
void eval_run_exports_the_catalogue(OtlpReceiver::Transport transport) {
  OtlpReceiver::Options options;
  options.transport = transport;
  OtlpReceiver receiver(options);
  ASSERT_TRUE(listening(receiver));
  TempDir tmp;
  const Demo demo = demo_data(tmp, {"mcqa", "string_match", "example_multi_step"}, 2);
  ASSERT_EQ(demo.environments.size(), 3u);
  constexpr int kRepeats = 2;
  const std::string out = tmp.file("out.jsonl");
  // One connection per host: the collector (inside the orchestrator) has more rollouts of an agent
  // in flight than that, so its pool queue histogram has samples. The replay latency keeps the
  // collection (4 rollouts one after another per agent) longer than a few export intervals, so that
  // the orchestrator exports while the servers run.
  std::string args = "eval run --model-type replay_model --input " + demo.input + " --output " +
                     out + " --num-repeats " + std::to_string(kRepeats) + " --concurrency 16" +
                     " ++global_aiohttp_connector_limit_per_host=1" +
                     " ++policy_model.responses_api_models.replay_model.replay_latency_ms="
                     "100" +
                     " ++head_server.port=0";
  for (const auto& env : demo.environments) args += " --resources-server " + env.resources_server;
  GymProcess run(args, tmp.file("eval.log"), telemetry_env(receiver, 100));
  ASSERT_EQ(run.wait_exit(), 0) << run.output();
  ASSERT_TRUE(receiver.sync()) << summary(receiver);

  // The rollouts themselves.
  std::map<std::string, std::size_t> rows_of_agent;
  for (const auto& row : read_jsonl(out)) ++rows_of_agent[agent_of(row)];
  EXPECT_TRUE(read_jsonl(tmp.file("out_failures.jsonl")).empty());
  ASSERT_EQ(rows_of_agent.size(), 3u) << run.output();
  std::map<std::string, std::size_t> rows_of_resources;
  for (const auto& [agent, n] : rows_of_agent) {
    EXPECT_EQ(n, 2u * kRepeats) << agent;
    rows_of_resources[kResourcesOfAgent.at(agent)] += n;
  }

  const auto requests = receiver.requests();
  for (const auto& r : requests) EXPECT_TRUE(r.error.empty()) << r.error;
  const auto all = gym::test::process_exports(requests);
  const auto by_instance = gym::test::exports_by_instance(requests);
  const auto last = last_exports(by_instance);
  check_never_exported(all);

  // One process per server instance plus the orchestrator, all in one run (one nemo.run.id).
  std::map<std::string, const ProcessExport*> by_name;
  std::set<std::string> run_ids;
  for (const auto& [id, p] : last) {
    by_name[p.string_attribute("nemo.gym.server.name")] = &p;
    run_ids.insert(p.string_attribute("nemo.run.id"));
  }
  ASSERT_EQ(run_ids.size(), 1u);
  const std::string run_id = *run_ids.begin();
  EXPECT_TRUE(std::regex_match(run_id, std::regex("[0-9a-f]{12}"))) << run_id;
  std::set<std::string> names;
  for (const auto& [name, p] : by_name) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{
                       "orchestrator", "policy_model", "mcqa", "mcqa_simple_agent", "string_match",
                       "string_match_simple_agent", "example_multi_step_resources_server",
                       "example_multi_step_simple_agent"}));
  ASSERT_EQ(last.size(), 8u) << "one service.instance.id per process";
  ASSERT_TRUE(by_name.count("orchestrator"));
  EXPECT_EQ(last.count(instance_id(run_id, "orchestrator", run.pid())), 1u);

  // Every metric of the catalogue but the memory gauges, each as the catalogue says, and per role
  // exactly the metrics it records (a role never creates what it does not record).
  std::set<std::string> exported;
  const std::set<std::string> server_http{kHttpDuration, kHttpActive};
  for (const auto& [id, p] : last) {
    SCOPED_TRACE(id);
    const std::string name = p.string_attribute("nemo.gym.server.name");
    std::string type = "resources_servers";
    std::set<std::string> expected = server_http;
    if (name == "orchestrator") {
      type = "orchestrator";
      expected = {kServersActive, kConnects, kQueue};
    } else if (name == "policy_model") {
      type = "responses_api_models";
    } else if (kResourcesOfAgent.count(name)) {
      type = "responses_api_agents";
      expected.insert({kRollout, kConnects});
    } else {
      expected.insert({kVerify, kSuccessRate});
    }
    check_resource(p, run_id, type);
    EXPECT_EQ(p.metric_names(), expected);
    for (const auto& m : p.metrics) check_descriptor(m);
    for (const auto& n : p.metric_names()) exported.insert(n);
  }
  EXPECT_EQ(exported, (std::set<std::string>{kRollout, kVerify, kSuccessRate, kServersActive,
                                             kQueue, kConnects, kHttpDuration, kHttpActive}));

  // Counts that must agree across processes.
  const ProcessExport& orchestrator = *by_name.at("orchestrator");
  for (const auto& [agent, n] : rows_of_agent) {
    SCOPED_TRACE(agent);
    ASSERT_TRUE(by_name.count(agent));
    const ProcessExport& a = *by_name.at(agent);
    // One sample per /run, and each /run the collector sent is one acquisition of the
    // orchestrator's pool, as is its one /aggregate_metrics call per agent.
    EXPECT_EQ(sum_of(a, kRollout), static_cast<double>(n));
    EXPECT_EQ(sum_of(a, kHttpDuration, {{kRoute, "/run"}, {kStatus, 200}}), static_cast<double>(n));
    const double received = sum_of(a, kHttpDuration, {{kRoute, "/run"}}) +
                            sum_of(a, kHttpDuration, {{kRoute, "/aggregate_metrics"}});
    EXPECT_EQ(sum_of(orchestrator, kConnects, {{kDestination, agent.c_str()}}), received);
    EXPECT_EQ(received, static_cast<double>(n + 1));
    // Its own /v1/responses: one self call per rollout, each one acquisition (destination: its own
    // name).
    EXPECT_EQ(sum_of(a, kConnects, {{kDestination, agent.c_str()}}), static_cast<double>(n));
    EXPECT_EQ(sum_of(a, kHttpDuration, {{kRoute, "/v1/responses"}}), static_cast<double>(n));
    // Queue samples of the collector's pool: per host (one connection per agent), each ended with a
    // connection; the first acquisition of an agent never waits.
    const double waited = sum_of(orchestrator, kQueue, {{kDestination, agent.c_str()}});
    EXPECT_GE(waited, 1.0);
    EXPECT_LE(waited, static_cast<double>(n - 1));
    EXPECT_EQ(waited,
              sum_of(orchestrator, kQueue,
                     {{kDestination, agent.c_str()}, {kConstraint, "per_host"}, {kOutcome, "ok"}}));
  }
  // Destinations of the collector's pool: the agents, nothing else.
  std::set<std::string> destinations;
  for (const auto* point : points(*orchestrator.metric(kConnects)))
    destinations.insert(attribute(*point, kDestination));
  EXPECT_EQ(destinations, (std::set<std::string>{"mcqa_simple_agent", "string_match_simple_agent",
                                                 "example_multi_step_simple_agent"}));

  // The policy model answered every agent's model calls.
  double model_calls = 0;
  for (const auto& [agent, n] : rows_of_agent)
    model_calls += sum_of(*by_name.at(agent), kConnects, {{kDestination, "policy_model"}});
  EXPECT_EQ(sum_of(*by_name.at("policy_model"), kHttpDuration, {{kRoute, "/v1/responses"}}),
            model_calls);
  EXPECT_GE(model_calls, static_cast<double>(read_jsonl(out).size()));

  for (const auto& [resources, n] : rows_of_resources) {
    SCOPED_TRACE(resources);
    ASSERT_TRUE(by_name.count(resources));
    const ProcessExport& r = *by_name.at(resources);
    // One sample per /verify; every verifier completed.
    EXPECT_EQ(sum_of(r, kVerify), static_cast<double>(n));
    EXPECT_EQ(sum_of(r, kHttpDuration, {{kRoute, "/verify"}, {kStatus, 200}}),
              static_cast<double>(n));
    const auto rate = points(*r.metric(kSuccessRate));
    ASSERT_EQ(rate.size(), 1u);
    EXPECT_EQ(point_value(*rate[0]), 1.0);
    // What the agent sent to it: /seed_session, /verify and tool calls, one acquisition each.
    std::string agent;
    for (const auto& [a, res] : kResourcesOfAgent)
      if (res == resources) agent = a;
    double served = 0;
    for (const auto* point : points(*r.metric(kHttpDuration)))
      if (attribute(*point, kRoute) != "/") served += static_cast<double>(point_count(*point));
    EXPECT_EQ(sum_of(*by_name.at(agent), kConnects, {{kDestination, resources.c_str()}}), served);
  }

  // http.route: templates as registered, never a raw path.
  const std::set<std::string> agent_routes{"/", "/run", "/v1/responses", "/aggregate_metrics"};
  for (const auto& [name, p] : by_name) {
    if (name == "orchestrator") continue;
    SCOPED_TRACE(name);
    const auto seen = routes(*p);
    for (const auto* point : points(*p->metric(kHttpDuration)))
      EXPECT_TRUE(has_attribute(*point, kRoute)) << "every request of a clean run matched";
    if (kResourcesOfAgent.count(name)) {
      EXPECT_TRUE(seen.count("/run") && seen.count("/v1/responses"));
      for (const auto& r : seen) EXPECT_TRUE(agent_routes.count(r)) << r;
    } else if (name == "policy_model") {
      EXPECT_TRUE(seen.count("/v1/responses"));
      for (const auto& r : seen) EXPECT_TRUE(r == "/" || r == "/v1/responses") << r;
    } else {
      EXPECT_TRUE(seen.count("/seed_session") && seen.count("/verify") &&
                  seen.count("/aggregate_metrics"));
      std::set<std::string> allowed{"/", "/seed_session", "/verify", "/aggregate_metrics"};
      if (name == "example_multi_step_resources_server") {
        // Its tool routes, as templates: the demo trajectories call both tools.
        EXPECT_TRUE(seen.count("/get_synonym_value")) << "tool route";
        allowed.insert({"/get_synonym_value", "/extract_synonym_values"});
      }
      for (const auto& r : seen) EXPECT_TRUE(allowed.count(r)) << r;
    }
    // The readiness probe: GET / (the orchestrator's probes).
    EXPECT_GE(sum_of(*p, kHttpDuration, {{kRoute, "/"}, {"http.request.method", "GET"}}), 1.0);

    // http.server.active_requests: Host header and method; nothing in flight at the end.
    const auto active = points(*p->metric(kHttpActive));
    bool with_host = false;
    for (const auto* point : active) {
      EXPECT_EQ(point_value(*point), 0.0) << json::serialize(*point);
      const std::string host = attribute(*point, "http.server_name");
      if (!host.empty()) {
        with_host = true;
        EXPECT_TRUE(std::regex_match(host, std::regex(R"(127\.0\.0\.1:\d+)"))) << host;
      }
    }
    EXPECT_TRUE(with_host);
  }

  // b: gym.servers.active: the seven servers while they run, 0 in the last export.
  const auto& orchestrator_exports = by_instance.at(orchestrator.instance_id());
  bool saw_all = false;
  for (const auto& p : orchestrator_exports) {
    if (const auto* m = p.metric(kServersActive)) {
      const auto v = points(*m);
      ASSERT_EQ(v.size(), 1u);
      saw_all = saw_all || point_value(*v[0]) == 7.0;
    }
  }
  EXPECT_TRUE(saw_all) << "no orchestrator export read gym.servers.active 7";
  const auto final_active = points(*orchestrator.metric(kServersActive));
  ASSERT_EQ(final_active.size(), 1u);
  EXPECT_EQ(point_value(*final_active[0]), 0.0);
}

TEST(InstrumentationEvalRun, EveryProcessExportsItsCatalogueWithCountsThatAgree) {
  eval_run_exports_the_catalogue(OtlpReceiver::Transport::http);
}

// The default protocol (issue 14): a whole deployment over OTLP/gRPC.
TEST(InstrumentationEvalRun, EveryProcessExportsItsCatalogueOverGrpc) {
  eval_run_exports_the_catalogue(OtlpReceiver::Transport::grpc);
}

// ---- A deployment of `gym serve` processes around gym_test_server -------------------------------

namespace {

// tests/support/gym_test_server as the policy model (failing: every /v1/responses answers 500; or
// slow: answers after a delay) and as the head server (its --config-yaml); mcqa and a simple_agent
// `test_agent` under `gym serve`, exporting to the receiver. The run id is fixed in the served
// config (telemetry.run_id), so every server and a --no-serve collector join it.
class ServeDeployment {
 public:
  static constexpr const char* kRunId = "0123456789ab";

  struct Options {
    std::optional<int> model_delay_ms;  // none: a failing model
    int interval_ms = 200;
    int agent_workers = 1;
    std::string extra_yaml{};  // top-level keys appended to the deployment's config
  };

  ServeDeployment(const TempDir& tmp, const OtlpReceiver& receiver, Options options) {
    for (const char* name : {"mcqa", "test_agent", "policy_model"})
      ports_[name] = reserved_.emplace_back().port();
    const std::string p = std::to_string(ports_["policy_model"]);
    yaml_ = std::string("telemetry:\n  run_id: '") + kRunId + "'\n" +
            "mcqa:\n  resources_servers:\n    mcqa:\n      entrypoint: app.py\n"
            "      host: 127.0.0.1\n      port: " +
            std::to_string(ports_["mcqa"]) + "\n" +
            // Small enough for a 413 in InstrumentationVerify, big enough for every real body.
            "      http_max_request_body_bytes: 8192\n" +
            "test_agent:\n  responses_api_agents:\n    simple_agent:\n      "
            "entrypoint: app.py\n"
            "      host: 127.0.0.1\n      port: " +
            std::to_string(ports_["test_agent"]) + "\n" +
            "      num_workers: " + std::to_string(options.agent_workers) + "\n" +
            "      resources_server:\n        type: resources_servers\n        "
            "name: mcqa\n"
            "      model_server:\n        type: responses_api_models\n        "
            "name: policy_model\n"
            "policy_model:\n  responses_api_models:\n    replay_model:\n      "
            "host: 127.0.0.1\n"
            "      port: " +
            p + "\n" + "head_server:\n  host: 127.0.0.1\n  port: " + p + "\n" + options.extra_yaml;
    const std::string config = tmp.write("deployment.yaml", yaml_);
    std::vector<std::string> model{test_server(), "--port", p, "--config-yaml", config};
    if (options.model_delay_ms) {
      model.push_back("--responses-delay-ms");
      model.push_back(std::to_string(*options.model_delay_ms));
    }
    model_ = std::make_unique<ChildProcess>(model);
    model_ready_ = model_->wait_port() > 0;
    for (const std::string instance : {"mcqa", "test_agent"}) {
      auto env = telemetry_env(receiver, options.interval_ms);
      env.push_back("NEMO_GYM_CONFIG_DICT=" + yaml_);
      env.push_back("NEMO_GYM_CONFIG_PATH=" + instance);
      servers_[instance] = std::make_unique<GymProcess>("serve", tmp.file(instance + ".log"), env);
    }
  }
  ~ServeDeployment() {
    for (auto& [name, s] : servers_) s->signal(SIGTERM);
    for (auto& [name, s] : servers_) s->wait_exit(std::chrono::seconds(20));
  }

  ::testing::AssertionResult ready() {
    if (!model_ready_) return ::testing::AssertionFailure() << "the test server did not start";
    for (const auto& [name, port] : ports_)
      if (!answers(port))
        return ::testing::AssertionFailure()
               << name << " does not answer: " << servers_.at(name)->output();
    return ::testing::AssertionSuccess();
  }
  int port(const std::string& name) const { return ports_.at(name); }
  GymProcess& server(const std::string& name) { return *servers_.at(name); }
  // service.instance.id of a single-process server (<run id>-<server name>-<pid>).
  std::string instance(const std::string& name) const {
    return instance_id(kRunId, name, servers_.at(name)->pid());
  }
  std::string head_override() const {
    return "++head_server.port=" + std::to_string(ports_.at("policy_model"));
  }
  // POST /v1/responses calls the test server received.
  int model_calls() const {
    const auto raw = post(ports_.at("policy_model"), "/hits", R"({"key":"/v1/responses"})");
    return json::parse(gym::test::body_of(raw)).at("hits").to_number<int>();
  }

 private:
  std::string yaml_;
  std::vector<gym::test::ReservedPort> reserved_;  // held while the servers run
  std::map<std::string, int> ports_;
  std::unique_ptr<ChildProcess> model_;
  bool model_ready_ = false;
  std::map<std::string, std::unique_ptr<GymProcess>> servers_;
};

// An export of process `instance` for which `done` holds; nullopt after the hang guard.
std::optional<ProcessExport> wait_for(const OtlpReceiver& receiver, const std::string& instance,
                                      const std::function<bool(const ProcessExport&)>& done) {
  return receiver.wait_for_export(
      [&](const ProcessExport& p) { return p.instance_id() == instance && done(p); }, kGuard);
}

// A /run body of the test agent.
std::string run_body(int i) {
  return R"({"responses_create_params":{"input":"question )" + std::to_string(i) + R"("}})";
}

// `n` input rows for test_agent.
std::string agent_rows(const TempDir& tmp, const std::string& name, int n) {
  std::string text;
  for (int i = 0; i < n; ++i)
    text += R"({"responses_create_params":{"input":"question )" + std::to_string(i) +
            R"("},"agent_ref":{"type":"responses_api_agents","name":"test_agent"}})"
            "\n";
  return tmp.write(name, text);
}

}  // namespace

// ---- c: a rollout whose model fails is still timed ----------------------------------------------

TEST(InstrumentationRollout, FailedRolloutsAreTimedAndRejectedBodiesAreNot) {
  OtlpReceiver receiver;
  ASSERT_TRUE(listening(receiver));
  TempDir tmp;
  ServeDeployment d(tmp, receiver, {});
  ASSERT_TRUE(d.ready());
  const int agent = d.port("test_agent");
  constexpr int kRuns = 3;
  for (int i = 0; i < kRuns; ++i) {
    const auto raw = post(agent, "/run", run_body(i));
    EXPECT_EQ(http_status(raw), 500) << raw;
  }
  // Rejected before the handler: no responses_create_params (422), not JSON (400).
  EXPECT_EQ(http_status(post(agent, "/run", R"({"input":"no params"})")), 422);
  EXPECT_EQ(http_status(post(agent, "/run", "{not json")), 400);
  EXPECT_EQ(d.model_calls(), kRuns);

  // Every /run got its response, so the export that counts all five holds the final samples.
  const auto p = wait_for(receiver, d.instance("test_agent"), [](const ProcessExport& e) {
    return sum_of(e, kHttpDuration, {{kRoute, "/run"}}) == 5.0;
  });
  ASSERT_TRUE(p) << summary(receiver);
  EXPECT_EQ(sum_of(*p, kRollout), static_cast<double>(kRuns)) << "6.2: failed ones included";
  EXPECT_EQ(sum_of(*p, kHttpDuration, {{kRoute, "/run"}, {kStatus, 500}}), kRuns * 1.0);
  EXPECT_EQ(sum_of(*p, kHttpDuration, {{kRoute, "/run"}, {kStatus, 422}}), 1.0);
  EXPECT_EQ(sum_of(*p, kHttpDuration, {{kRoute, "/run"}, {kStatus, 400}}), 1.0);
  // The inner /v1/responses failed too and has no gym.* metric of its own.
  EXPECT_EQ(sum_of(*p, kHttpDuration, {{kRoute, "/v1/responses"}, {kStatus, 500}}), kRuns * 1.0);
  EXPECT_EQ(sum_of(*p, kConnects, {{kDestination, "policy_model"}}), kRuns * 1.0);
  check_resource(*p, ServeDeployment::kRunId, "responses_api_agents");
  for (const auto& m : p->metrics) check_descriptor(m);
  check_never_exported(gym::test::process_exports(receiver.requests()));
}

// ---- d: gym.verify.success_rate counts completed verifications ----------------------------------

TEST(InstrumentationVerify, AThrowingVerifierLowersTheSuccessRateAndAWrongAnswerDoesNot) {
  OtlpReceiver receiver;
  ASSERT_TRUE(listening(receiver));
  TempDir tmp;
  ServeDeployment d(tmp, receiver, {});
  ASSERT_TRUE(d.ready());
  const int mcqa = d.port("mcqa");
  const std::string id = d.instance("mcqa");

  // A wrong answer: mcqa scores it 0.0, and the verification completed.
  const std::string wrong =
      R"({"responses_create_params":{"input":"Which?"},"options":[{"A":"one"},{"B":"two"}],)"
      R"("expected_answer":"A","response":{"output":[{"type":"message","role":"assistant",)"
      R"("content":[{"type":"output_text","text":"\\boxed{B}"}]}]}})";
  auto raw = post(mcqa, "/verify", wrong);
  ASSERT_EQ(http_status(raw), 200) << raw;
  EXPECT_EQ(json::parse(gym::test::body_of(raw)).at("reward").to_number<double>(), 0.0);
  auto p = wait_for(receiver, id, [](const ProcessExport& e) { return sum_of(e, kVerify) == 1.0; });
  ASSERT_TRUE(p) << summary(receiver);
  ASSERT_NE(p->metric(kSuccessRate), nullptr);
  EXPECT_EQ(sum_of(*p, kSuccessRate), 1.0) << "a 0.0 reward is a completed verification";

  // Bodies the schema rejects record no verify sample: no response (422), a response whose output
  // is not a list (422), not JSON (400).
  EXPECT_EQ(http_status(post(mcqa, "/verify", R"({"responses_create_params":{}})")), 422);
  EXPECT_EQ(http_status(post(mcqa, "/verify",
                             R"({"responses_create_params":{},"response":{"output":"x"}})")),
            422);
  EXPECT_EQ(http_status(post(mcqa, "/verify", "{\"responses_create_params\":")), 400);
  // A body over the limit: a 413 of the server layer, labelled with the route it was sent to.
  EXPECT_EQ(http_status(post(
                mcqa, "/verify",
                R"({"responses_create_params":{"input":")" + std::string(10000, 'x') + R"("}})")),
            413);
  // Passes the schema, but mcqa's verifier raises on a message whose content is a non-empty string
  // (upstream iterates it and asks each character for `.type`): a 500, a failure.
  const std::string throwing =
      R"({"responses_create_params":{"input":"Which?"},"response":{"output":)"
      R"([{"type":"message","role":"assistant","content":"B"}]}})";
  raw = post(mcqa, "/verify", throwing);
  EXPECT_EQ(http_status(raw), 500) << raw;
  EXPECT_NE(gym::test::body_of(raw).find("AttributeError"), std::string::npos) << raw;

  // Not routes: an unknown tool path (no route matches, and no built-in environment registers the
  // catch-all /{path}) and a method the route does not have: no http.route.
  EXPECT_EQ(http_status(post(mcqa, "/get_weather", R"({"city":"Paris"})")), 404);
  EXPECT_EQ(http_status(get(mcqa, "/verify")), 405);

  // Eight requests after the readiness probe, each answered before the next was sent.
  p = wait_for(receiver, id, [](const ProcessExport& e) {
    return sum_of(e, kHttpDuration) - sum_of(e, kHttpDuration, {{kRoute, "/"}}) == 8.0;
  });
  ASSERT_TRUE(p) << summary(receiver);
  EXPECT_EQ(sum_of(*p, kVerify), 2.0) << "the 422s, the 400 and the 413 were not verified";
  EXPECT_EQ(sum_of(*p, kSuccessRate), 0.5);
  EXPECT_EQ(sum_of(*p, kHttpDuration, {{kRoute, "/verify"}, {kStatus, 422}}), 2.0);
  EXPECT_EQ(sum_of(*p, kHttpDuration, {{kRoute, "/verify"}, {kStatus, 400}}), 1.0);
  EXPECT_EQ(sum_of(*p, kHttpDuration, {{kRoute, "/verify"}, {kStatus, 500}}), 1.0);
  EXPECT_EQ(sum_of(*p, kHttpDuration, {{kRoute, "/verify"}, {kStatus, 413}}), 1.0);
  EXPECT_EQ(sum_of(*p, kHttpDuration, {{kStatus, 404}}), 1.0);
  EXPECT_EQ(sum_of(*p, kHttpDuration, {{kStatus, 405}}), 1.0);
  for (const auto* point : points(*p->metric(kHttpDuration))) {
    const auto status = gym::test::attribute_map(point->at("attributes")).at(kStatus);
    if (status == json::value(404) || status == json::value(405)) {
      EXPECT_FALSE(has_attribute(*point, kRoute)) << json::serialize(*point);
    } else {
      EXPECT_TRUE(has_attribute(*point, kRoute)) << json::serialize(*point);
    }
  }
  for (const auto& r : routes(*p))
    EXPECT_TRUE(r == "/" || r == "/verify") << "a raw path as route: " << r;
  check_resource(*p, ServeDeployment::kRunId, "resources_servers");
  for (const auto& m : p->metrics) check_descriptor(m);
  EXPECT_EQ(p->metric_names(),
            (std::set<std::string>{kVerify, kSuccessRate, kHttpDuration, kHttpActive}));
}

// ---- e: connection-pool metrics of the --no-serve collector and of the agent --------------------

namespace {

// One `gym eval run --no-serve` against `d`; its pid and its last export.
struct Collection {
  int code = -1;
  pid_t pid = -1;
  std::string output;
  std::optional<ProcessExport> last;
  std::size_t rows = 0, failures = 0;
};

Collection collect(const TempDir& tmp, OtlpReceiver& receiver, const ServeDeployment& d,
                   const std::string& name, int rows, const std::string& pool_overrides) {
  const std::string input = agent_rows(tmp, name + ".jsonl", rows);
  const std::string out = tmp.file(name + "_out.jsonl");
  GymProcess run("eval run --no-serve " + d.head_override() + " --input " + input + " --output " +
                     out + " --concurrency " + std::to_string(rows) + " --disable-aggregation " +
                     pool_overrides,
                 tmp.file(name + ".log"), telemetry_env(receiver, 200));
  Collection c;
  c.pid = run.pid();
  c.code = run.wait_exit();
  c.output = run.output();
  c.rows = read_jsonl(out).size();
  c.failures = read_jsonl(tmp.file(name + "_out_failures.jsonl")).size();
  if (!receiver.sync()) return c;  // every export of the exited collector is read back
  const std::string id = instance_id(ServeDeployment::kRunId, "rollout_collection", c.pid);
  for (auto& p : gym::test::process_exports(receiver.requests()))
    if (p.instance_id() == id) c.last = std::move(p);
  return c;
}

// Checks what every collector run shares: its resource (`rollout_collection`, the deployment's run
// id), its metric set, its one destination label and connect_total = acquisitions (one per /run
// attempt).
void check_collector(const Collection& c, double acquisitions) {
  ASSERT_TRUE(c.last) << "no export of the collector\n" << c.output;
  const ProcessExport& p = *c.last;
  check_resource(p, ServeDeployment::kRunId, "rollout_collection");
  EXPECT_EQ(p.string_attribute("nemo.gym.server.name"), "rollout_collection");
  EXPECT_EQ(pid_of(p), c.pid);
  EXPECT_EQ(p.metric_names(), (std::set<std::string>{kConnects, kQueue}));
  for (const auto& m : p.metrics) check_descriptor(m);
  const auto connects = points(*p.metric(kConnects));
  ASSERT_EQ(connects.size(), 1u);
  EXPECT_EQ(attribute(*connects[0], kDestination), "test_agent");
  EXPECT_EQ(point_value(*connects[0]), acquisitions);
  for (const auto* point : points(*p.metric(kQueue)))
    EXPECT_EQ(attribute(*point, kDestination), "test_agent");
}

}  // namespace

TEST(InstrumentationPool, PerHostTotalAndAbandonedWaitsAndAcquisitionCounts) {
  OtlpReceiver receiver;
  ASSERT_TRUE(listening(receiver));
  TempDir tmp;
  // Each rollout takes at least the model's delay: every request of a collection has started long
  // before the first one ends, so with N requests and a limit of L, the L first are granted at once
  // (a fresh pool) and the N - L others wait.
  ServeDeployment d(tmp, receiver, {.model_delay_ms = 600});
  ASSERT_TRUE(d.ready());

  // The per-host limit binds: 10 concurrent /run, 2 connections.
  const Collection per_host =
      collect(tmp, receiver, d, "per_host", 10, "++global_aiohttp_connector_limit_per_host=2");
  EXPECT_EQ(per_host.code, 0) << per_host.output;
  EXPECT_EQ(per_host.rows, 10u);
  check_collector(per_host, 10);
  if (per_host.last) {
    const ProcessExport& p = *per_host.last;
    EXPECT_EQ(sum_of(p, kQueue), 8.0);
    EXPECT_EQ(sum_of(p, kQueue, {{kConstraint, "per_host"}, {kOutcome, "ok"}}), 8.0);
    // The queued fraction: samples / connect_total.
    EXPECT_EQ(sum_of(p, kQueue) / sum_of(p, kConnects), 0.8);
  }

  // The total limit binds (the per-host limit is reached at the same time: `total` wins).
  const Collection total_limit =
      collect(tmp, receiver, d, "total", 6, "++global_aiohttp_connector_limit=2");
  EXPECT_EQ(total_limit.code, 0) << total_limit.output;
  EXPECT_EQ(total_limit.rows, 6u);
  check_collector(total_limit, 6);
  if (total_limit.last) {
    EXPECT_EQ(sum_of(*total_limit.last, kQueue), 4.0);
    EXPECT_EQ(sum_of(*total_limit.last, kQueue, {{kConstraint, "total"}, {kOutcome, "ok"}}), 4.0);
  }

  // Waits ended by the retry budget: abandoned, the rollouts fail, nothing is retried (the budget
  // is spent), so connect_total still equals the number of requests.
  const Collection abandoned = collect(tmp, receiver, d, "abandoned", 3,
                                       "++global_aiohttp_connector_limit_per_host=1 "
                                       "++global_http_retry_budget_seconds=0.2");
  EXPECT_EQ(abandoned.code, 3) << abandoned.output;
  EXPECT_EQ(abandoned.rows, 1u);
  EXPECT_EQ(abandoned.failures, 2u);
  check_collector(abandoned, 3);
  if (abandoned.last) {
    EXPECT_EQ(sum_of(*abandoned.last, kQueue), 2.0);
    EXPECT_EQ(sum_of(*abandoned.last, kQueue, {{kConstraint, "per_host"}, {kOutcome, "abandoned"}}),
              2.0);
  }

  // The agent's own pool, unlimited: one acquisition per request it sent, per destination, counted
  // where the requests arrived. 17 rollouts reached it (10 + 6 + 1).
  constexpr double kReached = 17;
  const auto agent = wait_for(receiver, d.instance("test_agent"), [&](const ProcessExport& e) {
    return sum_of(e, kHttpDuration, {{kRoute, "/run"}}) == kReached;
  });
  ASSERT_TRUE(agent) << summary(receiver);
  EXPECT_EQ(sum_of(*agent, kRollout), kReached);
  EXPECT_EQ(sum_of(*agent, kConnects, {{kDestination, "test_agent"}}),
            sum_of(*agent, kHttpDuration, {{kRoute, "/v1/responses"}}));
  EXPECT_EQ(sum_of(*agent, kConnects, {{kDestination, "test_agent"}}), kReached);
  EXPECT_EQ(sum_of(*agent, kConnects, {{kDestination, "policy_model"}}), d.model_calls());
  EXPECT_EQ(d.model_calls(), static_cast<int>(kReached));
  EXPECT_EQ(agent->metric(kQueue), nullptr) << "the agent's pool never waited";
  check_resource(*agent, ServeDeployment::kRunId, "responses_api_agents");
  for (const auto& m : agent->metrics) check_descriptor(m);
  // /seed_session and /verify per rollout, as mcqa counted them (its readiness GETs aside).
  const auto mcqa = wait_for(receiver, d.instance("mcqa"), [&](const ProcessExport& e) {
    return sum_of(e, kHttpDuration, {{kRoute, "/verify"}}) == kReached;
  });
  ASSERT_TRUE(mcqa) << summary(receiver);
  const double sent_to_mcqa = sum_of(*mcqa, kHttpDuration, {{kRoute, "/seed_session"}}) +
                              sum_of(*mcqa, kHttpDuration, {{kRoute, "/verify"}});
  EXPECT_EQ(sent_to_mcqa, 2 * kReached);
  EXPECT_EQ(sum_of(*agent, kConnects, {{kDestination, "mcqa"}}), sent_to_mcqa);
  check_never_exported(gym::test::process_exports(receiver.requests()));
}

// A server shutting down cuts off the requests still waiting in its pool and the rollouts still
// running (docs/design/telemetry-contract.md#shutdown-flush): each wait is an `abandoned` sample
// and each /run a rollout sample, exported by the server's final flush. The agent's per-host limit
// of 1 makes the self-calls of the second and third /run (agent -> its own /v1/responses) wait
// behind the first, which holds its slot through a 3 s model call.
TEST(InstrumentationPool, WaitsAndRolloutsCutOffByAServerShutdownAreRecorded) {
  OtlpReceiver receiver;
  ASSERT_TRUE(listening(receiver));
  TempDir tmp;
  ServeDeployment d(
      tmp, receiver,
      {.model_delay_ms = 3000, .extra_yaml = "global_aiohttp_connector_limit_per_host: 1\n"});
  ASSERT_TRUE(d.ready());
  const int agent = d.port("test_agent");
  const std::string id = d.instance("test_agent");
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i)
    clients.emplace_back([agent, i] { (void)post(agent, "/run", run_body(i)); });
  // All three self-calls have started their acquisition (connect_total counts them before any
  // wait) and the first one reached the model: the other two are queued behind it.
  const auto queued = wait_for(receiver, id, [&](const ProcessExport& e) {
    return sum_of(e, kConnects, {{kDestination, "test_agent"}}) == 3.0 && d.model_calls() == 1;
  });
  ASSERT_TRUE(queued) << summary(receiver);
  // (The three /seed_session calls to mcqa queued too, behind the same limit, and ended `ok`.)
  EXPECT_EQ(sum_of(*queued, kQueue, {{kDestination, "test_agent"}}), 0.0)
      << "no self-call wait has ended yet";
  d.server("test_agent").signal(SIGTERM);
  EXPECT_EQ(d.server("test_agent").wait_exit(std::chrono::seconds(30)), 0);
  for (auto& c : clients) c.join();
  ASSERT_TRUE(receiver.sync()) << summary(receiver);
  const auto exports = last_exports(gym::test::exports_by_instance(receiver.requests()));
  ASSERT_TRUE(exports.count(id)) << summary(receiver);
  const ProcessExport& last = exports.at(id);
  EXPECT_EQ(sum_of(last, kQueue, {{kDestination, "test_agent"}}), 2.0) << summary(receiver);
  EXPECT_EQ(
      sum_of(last, kQueue,
             {{kConstraint, "per_host"}, {kOutcome, "abandoned"}, {kDestination, "test_agent"}}),
      2.0);
  EXPECT_EQ(sum_of(last, kRollout), 3.0) << "the three cut-off rollouts are timed";
  EXPECT_EQ(sum_of(last, kHttpActive), 0.0) << "nothing is left in flight";
}

// ---- f: telemetry off exports nothing; the rollouts still run -----------------------------------

namespace {

// `gym eval run` of mcqa with servers: every rollout is written, and nothing reaches the receiver.
// `traces`: whether span exports are expected (metrics_enabled: false is "traces only").
void run_without_metrics(const std::vector<std::string>& env, const std::string& extra,
                         bool traces) {
  OtlpReceiver receiver;
  ASSERT_TRUE(listening(receiver));
  TempDir tmp;
  const Demo demo = demo_data(tmp, {"mcqa"}, 2);
  const std::string out = tmp.file("out.jsonl");
  auto full_env = telemetry_env(receiver, 200);
  full_env.insert(full_env.end(), env.begin(), env.end());
  GymProcess run("eval run --resources-server mcqa --model-type replay_model --input " +
                     demo.input + " --output " + out + " --num-repeats 2 --concurrency 4 " + extra +
                     " ++head_server.port=0",
                 tmp.file("eval.log"), full_env);
  ASSERT_EQ(run.wait_exit(), 0) << run.output();
  EXPECT_EQ(read_jsonl(out).size(), 2 * demo.rows.size());
  EXPECT_TRUE(read_jsonl(tmp.file("out_failures.jsonl")).empty());
  // Every process has exited: whatever it exported has been answered, and sync() reads it back.
  ASSERT_TRUE(receiver.sync()) << summary(receiver);
  std::size_t metrics = 0, spans = 0, other = 0;
  for (const auto& r : receiver.requests()) {
    const std::string path = r.path();
    (path == "/v1/metrics" ? metrics : path == "/v1/traces" ? spans : other) += 1;
  }
  EXPECT_EQ(metrics, 1u) << "only the sync request: " << summary(receiver);
  EXPECT_EQ(other, 0u) << summary(receiver);
  EXPECT_EQ(spans > 0, traces) << summary(receiver);
  EXPECT_TRUE(gym::test::process_exports(receiver.requests()).empty());
}

}  // namespace

// NeMo Gym documents `metrics_enabled: false  # traces only`.
TEST(InstrumentationDisabled, MetricsEnabledFalseExportsTracesOnly) {
  run_without_metrics({}, "++telemetry.metrics_enabled=false", true);
}

TEST(InstrumentationDisabled, NoEnabledVariableExportsNothing) {
  run_without_metrics({"NEMO_GYM_OTEL_ENABLED="}, "", false);
}

// ---- g: a run shorter than the export interval still exports everything (the shutdown flush) ----

TEST(InstrumentationShutdown, ARunShorterThanTheIntervalIsExportedAtShutdown) {
  OtlpReceiver receiver;
  ASSERT_TRUE(listening(receiver));
  TempDir tmp;
  const Demo demo = demo_data(tmp, {"mcqa"}, 2);
  const std::string out = tmp.file("out.jsonl");
  GymProcess run("eval run --resources-server mcqa --model-type replay_model --input " +
                     demo.input + " --output " + out +
                     " --num-repeats 2 --concurrency 4 ++head_server.port=0",
                 tmp.file("eval.log"), telemetry_env(receiver, 60000));
  ASSERT_EQ(run.wait_exit(), 0) << run.output();
  ASSERT_TRUE(receiver.sync()) << summary(receiver);
  const std::size_t rows = read_jsonl(out).size();
  EXPECT_EQ(rows, 2 * demo.rows.size());

  const auto last = last_exports(gym::test::exports_by_instance(receiver.requests()));
  std::map<std::string, const ProcessExport*> by_name;
  for (const auto& [id, p] : last) by_name[p.string_attribute("nemo.gym.server.name")] = &p;
  ASSERT_EQ(by_name.size(), 4u) << "every process exported at shutdown: " << summary(receiver);
  for (const char* name : {"orchestrator", "mcqa", "mcqa_simple_agent", "policy_model"})
    ASSERT_TRUE(by_name.count(name)) << name;
  // The final flush carries the whole run.
  EXPECT_EQ(sum_of(*by_name.at("mcqa_simple_agent"), kRollout), static_cast<double>(rows));
  EXPECT_EQ(sum_of(*by_name.at("mcqa"), kVerify), static_cast<double>(rows));
  EXPECT_EQ(sum_of(*by_name.at("policy_model"), kHttpDuration, {{kRoute, "/v1/responses"}}),
            sum_of(*by_name.at("mcqa_simple_agent"), kConnects, {{kDestination, "policy_model"}}));
  EXPECT_EQ(sum_of(*by_name.at("orchestrator"), kConnects, {{kDestination, "mcqa_simple_agent"}}),
            static_cast<double>(rows + 1));
  // The orchestrator's last point is 0.
  const auto* active = by_name.at("orchestrator")->metric(kServersActive);
  ASSERT_NE(active, nullptr);
  ASSERT_EQ(points(*active).size(), 1u);
  EXPECT_EQ(point_value(*points(*active)[0]), 0.0);
}

// ---- h, i: `gym env start` with a two-worker server and Prometheus ports ------------------------

namespace {

// The value of `label` in the target_info line of a Prometheus text body ("" when absent).
std::string target_label(const std::string& text, const std::string& label) {
  const auto line_start = text.find("\ntarget_info{");
  if (line_start == std::string::npos) return "";
  const auto line_end = text.find('\n', line_start + 1);
  const std::string line = text.substr(line_start + 1, line_end - line_start - 1);
  const std::string key = label + "=\"";
  const auto at = line.find(key);
  if (at == std::string::npos) return "";
  return line.substr(at + key.size(), line.find('"', at + key.size()) - at - key.size());
}

std::string scrape(int port) { return gym::test::body_of(get(port, "/metrics")); }

int parent_of(std::int64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 2));
  std::string state;
  int ppid = -1;
  rest >> state >> ppid;
  return ppid;
}

}  // namespace

void two_workers_report_apart(OtlpReceiver::Transport transport) {
  OtlpReceiver::Options options;
  options.transport = transport;
  OtlpReceiver receiver(options);
  ASSERT_TRUE(listening(receiver));
  TempDir tmp;
  const Demo demo = demo_data(tmp, {"mcqa"}, 2);
  // The orchestrator's port, then one per worker of each instance: 1 + 2 + 1 + 1.
  const auto prometheus_ports = gym::test::reserve_consecutive_ports(5);
  const int base = prometheus_ports.front().port();
  const gym::test::ReservedPort head_reserved;
  const int head = head_reserved.port();
  GymProcess env(
      "env start --resources-server mcqa --model-type replay_model"
      " ++input_jsonl_fpath=" +
          demo.input +
          " ++mcqa.resources_servers.mcqa.num_workers=2"
          " ++telemetry.prometheus.port=" +
          std::to_string(base) + " ++head_server.port=" + std::to_string(head),
      tmp.file("env.log"), telemetry_env(receiver, 200));
  ASSERT_TRUE(env.wait_for("servers ready!")) << env.output();

  // i: prometheus_ports per instance, in /server_instances and in the served config.
  const auto listing = json::parse(gym::test::body_of(get(head, "/server_instances"))).as_array();
  ASSERT_EQ(listing.size(), 3u);
  std::map<std::string, json::object> instances;
  std::set<std::int64_t> assigned;
  for (const auto& v : listing) {
    const auto& o = v.as_object();
    instances[std::string(o.at("process_name").as_string())] = o;
    ASSERT_TRUE(o.contains("prometheus_ports")) << json::serialize(o);
    for (const auto& port : o.at("prometheus_ports").as_array()) assigned.insert(port.as_int64());
  }
  ASSERT_TRUE(instances.count("mcqa") && instances.count("mcqa_simple_agent") &&
              instances.count("policy_model"));
  EXPECT_EQ(instances["mcqa"].at("prometheus_ports").as_array().size(), 2u);
  EXPECT_EQ(instances["mcqa_simple_agent"].at("prometheus_ports").as_array().size(), 1u);
  EXPECT_EQ(instances["policy_model"].at("prometheus_ports").as_array().size(), 1u);
  EXPECT_EQ(assigned, (std::set<std::int64_t>{base + 1, base + 2, base + 3, base + 4}));
  const auto served_text = json::parse(gym::test::body_of(get(head, "/global_config_dict_yaml")));
  const auto served =
      gym::core::parse_yaml(std::string(served_text.as_string()), "served config").as_object();
  EXPECT_EQ(served.at("mcqa").at("resources_servers").at("mcqa").at("prometheus_ports"),
            instances["mcqa"].at("prometheus_ports"));
  const std::string run_id(served.at("telemetry").at("run_id").as_string());  // the served run id

  // One rollout, then each server's endpoint holds its own metrics.
  const int agent = static_cast<int>(instances["mcqa_simple_agent"].at("port").as_int64());
  const auto raw = post(agent, "/run", json::serialize(demo.rows.at(0)));
  ASSERT_EQ(http_status(raw), 200) << raw;
  const auto prom_port = [&](const std::string& name, std::size_t i) {
    return static_cast<int>(instances[name].at("prometheus_ports").as_array().at(i).as_int64());
  };
  const std::string agent_text = scrape(prom_port("mcqa_simple_agent", 0));
  EXPECT_NE(agent_text.find("gym_rollout_duration_ms_milliseconds_count"), std::string::npos)
      << agent_text;
  EXPECT_NE(agent_text.find("http_server_request_duration_seconds_bucket{"), std::string::npos);
  EXPECT_EQ(target_label(agent_text, "service_name"), "nemo-gym/mcqa_simple_agent");
  const std::string model_text = scrape(prom_port("policy_model", 0));
  EXPECT_NE(model_text.find("http_server_request_duration_seconds_count"), std::string::npos)
      << model_text;
  EXPECT_EQ(model_text.find("gym_rollout_duration_ms"), std::string::npos);
  EXPECT_EQ(target_label(model_text, "service_name"), "nemo-gym/policy_model");
  const std::string orchestrator_text = scrape(base);
  EXPECT_NE(orchestrator_text.find("gym_servers_active"), std::string::npos) << orchestrator_text;
  EXPECT_EQ(target_label(orchestrator_text, "service_name"), "nemo-gym/orchestrator");
  EXPECT_EQ(orchestrator_text.find("http_server_request_duration_seconds"), std::string::npos);

  // h: both mcqa workers serve. Which one accepts a connection is the kernel's choice, so send
  // requests until both endpoints count some (bounded).
  const int mcqa = static_cast<int>(instances["mcqa"].at("port").as_int64());
  std::set<std::string> worker_pids;
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 10; ++i) get(mcqa, "/");
    bool both = true;
    worker_pids.clear();
    for (std::size_t w = 0; w < 2; ++w) {
      const std::string text = scrape(prom_port("mcqa", w));
      both = both && text.find("http_server_request_duration_seconds_count") != std::string::npos;
      worker_pids.insert(target_label(text, "process_pid"));
      EXPECT_EQ(target_label(text, "service_name"), "nemo-gym/mcqa");
    }
    if (both) break;
  }
  EXPECT_EQ(worker_pids.size(), 2u) << "each worker serves its own port";
  const std::int64_t supervisor = instances["mcqa"].at("pid").as_int64();
  EXPECT_FALSE(worker_pids.count(std::to_string(supervisor)));

  // Over OTLP: each worker is its own process, the supervisor exports nothing, one run id
  // everywhere.
  std::set<std::string> ids;
  std::set<std::int64_t> pids;
  const auto seen = receiver.wait_for_export(
      [&](const ProcessExport& p) {
        if (p.string_attribute("nemo.gym.server.name") != "mcqa") return false;
        ids.insert(p.instance_id());
        pids.insert(pid_of(p));
        return ids.size() == 2;
      },
      kGuard);
  ASSERT_TRUE(seen) << summary(receiver);
  EXPECT_EQ(pids.size(), 2u);
  EXPECT_FALSE(pids.count(supervisor));
  for (const auto pid : pids) {
    EXPECT_TRUE(worker_pids.count(std::to_string(pid))) << pid;
    EXPECT_EQ(parent_of(pid), supervisor) << "worker " << pid << " of " << supervisor;
  }
  // After the shutdown (each process flushes), every process of the deployment exported.
  env.signal(SIGTERM);
  EXPECT_EQ(env.wait_exit(std::chrono::seconds(60)), 143) << env.output();
  ASSERT_TRUE(receiver.sync()) << summary(receiver);
  std::set<std::string> run_ids;
  std::set<std::string> processes;
  for (const auto& p : gym::test::process_exports(receiver.requests())) {
    run_ids.insert(p.string_attribute("nemo.run.id"));
    processes.insert(p.instance_id());
    if (p.string_attribute("nemo.gym.server.name") == "mcqa") {
      check_resource(p, run_id, "resources_servers");
    }
  }
  EXPECT_EQ(run_ids, (std::set<std::string>{run_id}));
  EXPECT_EQ(processes.size(), 5u) << "orchestrator, two mcqa workers, agent, model";
  EXPECT_EQ(processes.count(instance_id(run_id, "orchestrator", env.pid())), 1u);
  for (const auto& name : {std::string("mcqa_simple_agent"), std::string("policy_model")})
    EXPECT_EQ(processes.count(instance_id(
                  run_id, name, static_cast<pid_t>(instances[name].at("pid").as_int64()))),
              1u)
        << name;
}

TEST(InstrumentationEnvStart, TwoWorkersReportApartAndEveryInstanceServesItsPrometheusPorts) {
  two_workers_report_apart(OtlpReceiver::Transport::http);
}

// Over gRPC (issue 14): each forked worker makes its own gRPC channel after the fork (the
// supervisor never starts one), and the orchestrator's channel outlives its fork+exec of servers.
TEST(InstrumentationEnvStart, TwoWorkersReportApartOverGrpc) {
  two_workers_report_apart(OtlpReceiver::Transport::grpc);
}

// With memory profiling the orchestrator exports the seven memory gauges; a server with
// num_workers: 3 counts its supervisor and all three workers, and their PSS sum is below their RSS
// sum (the workers share the supervisor's pages). Without profiling no memory metric exists:
// InstrumentationEvalRun checks the orchestrator's complete metric set.
TEST(InstrumentationMemory, ThreeWorkersCountFourProcessesAndPssIsBelowRss) {
  OtlpReceiver receiver;
  ASSERT_TRUE(listening(receiver));
  TempDir tmp;
  const Demo demo = demo_data(tmp, {"mcqa"}, 2);
  auto env = telemetry_env(receiver, 200);
  env.push_back("NEMO_GYM_OTEL_MEMORY_PROFILING_ENABLED=1");
  env.push_back("NEMO_GYM_OTEL_MEMORY_PROFILING_INTERVAL_SECONDS=0.2");
  const gym::test::ReservedPort head_reserved;
  const int head = head_reserved.port();
  GymProcess deployment(
      "env start --resources-server mcqa --model-type replay_model"
      " ++input_jsonl_fpath=" +
          demo.input +
          " ++mcqa.resources_servers.mcqa.num_workers=3"
          " ++head_server.port=" +
          std::to_string(head),
      tmp.file("env.log"), env);
  ASSERT_TRUE(deployment.wait_for("servers ready!")) << deployment.output();
  const auto listing = json::parse(gym::test::body_of(get(head, "/server_instances"))).as_array();
  std::map<std::string, std::pair<std::int64_t, std::string>> roots;  // name -> (pid, type)
  for (const auto& v : listing) {
    const auto& o = v.as_object();
    roots[std::string(o.at("process_name").as_string())] = {
        o.at("pid").as_int64(), std::string(o.at("server_type").as_string())};
  }
  ASSERT_EQ(roots.size(), 3u);
  const auto mcqa_filter = [&](const char* type) {
    Attributes a{{"nemo.gym.server.name", json::value("mcqa")},
                 {"nemo.gym.server.type", json::value("resources_servers")},
                 {"process.pid", json::value(roots["mcqa"].first)}};
    if (type) a["memory.type"] = json::value(type);
    return a;
  };
  // Wait for an orchestrator export that saw all four processes of mcqa's tree (the workers fork
  // right after the supervisor starts, so an early sample may see fewer).
  const auto sample = receiver.wait_for_export(
      [&](const ProcessExport& p) {
        return p.string_attribute("nemo.gym.server.name") == "orchestrator" &&
               total(p.metric("gym.server.processes"), mcqa_filter(nullptr)) == 4;
      },
      kGuard);
  ASSERT_TRUE(sample) << summary(receiver);
  const ProcessExport& o = *sample;
  EXPECT_EQ(o.metric_names(),
            (std::set<std::string>{"gym.servers.active", "gym.server.memory.usage",
                                   "gym.server.memory.sampled_peak", "gym.server.processes",
                                   "gym.host.memory.usage", "gym.host.memory.available",
                                   "gym.host.memory.total", "gym.host.memory.sampled_peak"}));
  for (const auto& m : o.metrics) {
    const std::string name(m.at("name").as_string());
    if (name == "gym.servers.active") continue;
    EXPECT_EQ(metric_kind(m), "gauge") << name;
    EXPECT_EQ(text_field(m, "unit"), name == "gym.server.processes" ? "{process}" : "By") << name;
    for (const auto* p : points(m)) {
      EXPECT_TRUE(p->contains("asInt")) << name << " is an int64 gauge";
      std::set<std::string> keys;
      if (const auto* a = p->if_contains("attributes"))
        for (const auto& [k, v] : gym::test::attribute_map(*a)) keys.insert(k);
      std::set<std::string> expected;
      if (name.starts_with("gym.server.")) {
        expected = {"nemo.gym.server.name", "nemo.gym.server.type", "process.pid"};
        if (name != "gym.server.processes") expected.insert("memory.type");
      }
      EXPECT_EQ(keys, expected) << name << ": host points carry none";
    }
  }
  // Every server tree is sampled under its root pid and type; the others have one process.
  for (const auto& [name, root] : roots) {
    Attributes filter{{"nemo.gym.server.name", json::value(name)},
                      {"nemo.gym.server.type", json::value(root.second)},
                      {"process.pid", json::value(root.first)}};
    EXPECT_EQ(total(o.metric("gym.server.processes"), filter), name == "mcqa" ? 4 : 1) << name;
  }
  const double rss = total(o.metric("gym.server.memory.usage"), mcqa_filter("rss"));
  const double pss = total(o.metric("gym.server.memory.usage"), mcqa_filter("pss"));
  EXPECT_GT(rss, 0);
  EXPECT_GT(pss, 0);
  EXPECT_LT(pss, rss) << "four processes share pages: their PSS sum is below their RSS sum";
  EXPECT_GE(total(o.metric("gym.server.memory.sampled_peak"), mcqa_filter("rss")), rss);
  EXPECT_GE(total(o.metric("gym.server.memory.sampled_peak"), mcqa_filter("pss")), pss);
  const double host_total = total(o.metric("gym.host.memory.total"));
  const double available = total(o.metric("gym.host.memory.available"));
  const double usage = total(o.metric("gym.host.memory.usage"));
  EXPECT_GT(host_total, 0);
  EXPECT_EQ(usage, host_total - available);
  EXPECT_GE(total(o.metric("gym.host.memory.sampled_peak")), usage);

  // At shutdown the sampler's final sample comes before gym.servers.active goes to 0; the
  // orchestrator's last export still carries the memory gauges.
  deployment.signal(SIGTERM);
  EXPECT_EQ(deployment.wait_exit(std::chrono::seconds(60)), 143) << deployment.output();
  ASSERT_TRUE(receiver.sync()) << summary(receiver);
  const auto exports = last_exports(gym::test::exports_by_instance(receiver.requests()));
  bool found = false;
  for (const auto& [id, p] : exports) {
    if (p.string_attribute("nemo.gym.server.name") != "orchestrator") {
      EXPECT_EQ(p.metric("gym.server.memory.usage"), nullptr) << id << ": orchestrator only";
      continue;
    }
    found = true;
    EXPECT_EQ(total(p.metric("gym.servers.active")), 0);
    EXPECT_NE(p.metric("gym.server.memory.usage"), nullptr);
  }
  EXPECT_TRUE(found);
}
