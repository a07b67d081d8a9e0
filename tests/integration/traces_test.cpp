// Traces end to end (issue 14): real `gym` processes write their spans as console exporter lines
// into one shared file, and every check reads those lines: one rollout is one connected tree across
// the collector, agent, model and resources servers, span counts match the requests made, samplers
// export what they should, a failure row names its trace, and a client instrumented with the
// official OpenTelemetry JavaScript SDK (npm) sees every span of the rollout it started join its
// own trace. The data is the project's own demo data.
#include <gtest/gtest.h>

#include <signal.h>

#include <boost/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "demo_data/demo_data.h"
#include "files.h"
#include "npm_package.h"
#include "otlp_receiver.h"
#include "process.h"
#include "reserved_port.h"
#include "rollout_rows.h"
#include "telemetry_recorder.h"
#include "temp_dir.h"

namespace {
namespace json = boost::json;
using gym::test::LoggedProcess;
using gym::test::read_jsonl;
using gym::test::read_lines;
using gym::test::TempDir;
using namespace std::chrono_literals;

std::string gym_binary() { return gym::test::build_path("src/cli/gym"); }

using Span = json::object;

std::string str(const Span& s, std::string_view key) { return std::string(s.at(key).as_string()); }
std::string server_of(const Span& s) {
  return std::string(s.at("resource").at("nemo.gym.server.name").as_string());
}
std::string attribute(const Span& s, std::string_view key) {
  const auto* v = s.at("attributes").as_object().if_contains(key);
  if (!v) return {};
  return v->is_string() ? std::string(v->get_string()) : json::serialize(*v);
}

// The span lines of a console file (metric lines carry no trace_id).
std::vector<Span> spans_in(const std::string& file) {
  std::vector<Span> out;
  for (const auto& line : read_lines(file)) {
    if (line.find("\"trace_id\"") == std::string::npos) continue;
    out.push_back(json::parse(line).as_object());
  }
  return out;
}

std::map<std::string, std::vector<Span>> by_trace(const std::vector<Span>& spans) {
  std::map<std::string, std::vector<Span>> out;
  for (const auto& s : spans) out[str(s, "trace_id")].push_back(s);
  return out;
}

std::size_t count_named(const std::vector<Span>& spans, std::string_view name) {
  return static_cast<std::size_t>(std::count_if(
      spans.begin(), spans.end(), [&](const Span& s) { return s.at("name").as_string() == name; }));
}

// One tree: span ids unique, exactly one root, every other span's parent in the trace. Returns
// the root, or fails.
::testing::AssertionResult one_tree(const std::vector<Span>& trace, Span* root_out = nullptr) {
  std::set<std::string> ids;
  for (const auto& s : trace)
    if (!ids.insert(str(s, "span_id")).second)
      return ::testing::AssertionFailure() << "span id twice: " << str(s, "span_id");
  int roots = 0;
  for (const auto& s : trace) {
    const std::string parent = str(s, "parent_span_id");
    if (parent.empty()) {
      ++roots;
      if (root_out) *root_out = s;
    } else if (!ids.count(parent)) {
      return ::testing::AssertionFailure() << "orphan: " << json::serialize(s);
    }
  }
  if (roots != 1) return ::testing::AssertionFailure() << roots << " roots";
  return ::testing::AssertionSuccess();
}

const Span* parent_of(const std::vector<Span>& trace, const Span& s) {
  for (const auto& p : trace)
    if (p.at("span_id") == s.at("parent_span_id")) return &p;
  return nullptr;
}

struct Demo {
  gym::demo_data::DemoData data;
  std::vector<json::object> rows;
  std::string selectors;  // --resources-server ... for every environment
};

Demo demo(const TempDir& tmp, int tasks_per_env) {
  gym::demo_data::DemoOptions options;
  options.tasks_per_env = tasks_per_env;
  Demo d{gym::demo_data::generate(tmp.file("demo"), options), {}, {}};
  d.rows = read_jsonl(d.data.input.string());
  for (const auto& env : d.data.environments)
    d.selectors += " --resources-server " + env.resources_server;
  return d;
}

// Telemetry on, spans (and metrics) as console lines into `file`; whatever the shell exports is
// neutralised.
std::vector<std::string> console_env(const std::string& file, const std::string& groups,
                                     std::vector<std::string> extra = {}) {
  std::vector<std::string> env{"NEMO_GYM_OTEL_ENABLED=1", "NEMO_GYM_OTEL_EXPORTER=console",
                               "NEMO_GYM_OTEL_CONSOLE_PATH=" + file,
                               "NEMO_GYM_OTEL_SPAN_GROUPS=" + groups,
                               "OTEL_BSP_SCHEDULE_DELAY=200"};
  for (const char* name :
       {"NEMO_LENS_ENABLED", "OTEL_SDK_DISABLED", "NEMO_LENS_EXPORTER", "NEMO_LENS_SPAN_GROUPS",
        "NEMO_GYM_OTEL_TRACES_ENABLED", "NEMO_LENS_TRACES_ENABLED", "OTEL_TRACES_SAMPLER",
        "OTEL_TRACES_SAMPLER_ARG", "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
        "OTEL_RESOURCE_ATTRIBUTES"})
    env.push_back(std::string(name) + "=");
  for (auto& e : extra) env.push_back(std::move(e));
  return env;
}

// `gym eval run` of the demo with its own servers; the exit code.
int eval_run(const TempDir& tmp, const Demo& d, const std::vector<std::string>& env,
             const std::string& input, const std::string& out) {
  std::string command = "env";
  for (const auto& e : env) command += " '" + e + "'";
  command += " timeout 300 " + gym_binary() + " eval run" + d.selectors +
             " --model-type replay_model --input " + input + " --output " + out +
             " --concurrency 4 ++head_server.port=0 >" + tmp.file("eval.log") + " 2>&1";
  return gym::test::run_command(command).code;
}

std::string rollout_id(const json::object& row) {
  return std::to_string(row.at("_ng_task_index").as_int64()) + "-" +
         std::to_string(row.at("_ng_rollout_index").as_int64());
}

}  // namespace

// per_rollout: every rollout is its own trace, one connected tree from the collector's call to the
// last verify, and every request inside it has its CLIENT span and its SERVER span.
TEST(Traces, PerRolloutEveryRolloutIsOneConnectedTreeWithASpanPairPerRequest) {
  TempDir tmp;
  const Demo d = demo(tmp, 3);
  const std::string file = tmp.file("telemetry.jsonl");
  const std::string out = tmp.file("out.jsonl");
  ASSERT_EQ(eval_run(tmp, d, console_env(file, "per_rollout"), d.data.input.string(), out), 0)
      << gym::test::read_text(tmp.file("eval.log"));
  const auto results = read_jsonl(out);
  ASSERT_EQ(results.size(), d.rows.size());

  const auto spans = spans_in(file);
  EXPECT_EQ(count_named(spans, "gym.job"), 0u);  // not in per_rollout
  std::set<std::string> rollout_ids;
  std::size_t rollout_traces = 0;
  for (const auto& [trace_id, trace] : by_trace(spans)) {
    if (count_named(trace, "gym.rollout") == 0) continue;  // liveness probes, aggregate metrics
    ++rollout_traces;
    SCOPED_TRACE(trace_id);
    Span root;
    ASSERT_TRUE(one_tree(trace, &root));
    // The root is the collector's call to /run (the orchestrator collects in `gym eval run`).
    EXPECT_EQ(str(root, "name"), "HTTP POST");
    EXPECT_EQ(str(root, "kind"), "client");
    EXPECT_EQ(server_of(root), "orchestrator");
    EXPECT_TRUE(attribute(root, "url.full").ends_with("/run")) << attribute(root, "url.full");
    // The collector knows the row: its call carries the rollout's id, as the agent's span does.
    for (const auto& s : trace) {
      if (str(s, "name") == "gym.rollout") {
        EXPECT_EQ(attribute(root, "nemo.gym.rollout.id"), attribute(s, "nemo.gym.rollout.id"));
      }
    }
    EXPECT_EQ(count_named(trace, "gym.rollout"), 1u);
    EXPECT_EQ(count_named(trace, "POST /run"), 1u);
    EXPECT_EQ(count_named(trace, "POST /seed_session"), 1u);
    EXPECT_EQ(count_named(trace, "POST /verify"), 1u);
    EXPECT_EQ(count_named(trace, "gym.verify"), 1u);
    // Every request made inside the rollout: one CLIENT span in the caller, one SERVER span in the
    // server it called, its child.
    std::size_t clients = 0, servers = 0, model_servers = 0;
    for (const auto& s : trace) {
      const std::string kind = str(s, "kind");
      if (kind == "client") ++clients;
      if (kind == "server") {
        ++servers;
        const Span* caller = parent_of(trace, s);
        ASSERT_NE(caller, nullptr);
        EXPECT_EQ(str(*caller, "kind"), "client") << json::serialize(s);
        EXPECT_EQ(attribute(s, "http.response.status_code"), "200") << json::serialize(s);
        if (server_of(s) == "policy_model") ++model_servers;
      }
      // Semantic spans name their server; rollout-scoped ones carry the rollout id.
      if (str(s, "name").starts_with("gym.")) {
        EXPECT_EQ(attribute(s, "nemo.gym.server.name"), server_of(s));
      }
    }
    EXPECT_EQ(clients, servers);
    EXPECT_EQ(count_named(trace, "gym.model.responses"), model_servers);
    EXPECT_GT(model_servers, 0u);
    // The canonical shape: gym.rollout -> HTTP POST -> POST /verify -> gym.verify.
    for (const auto& s : trace) {
      if (str(s, "name") != "gym.verify") continue;
      const Span* server = parent_of(trace, s);
      ASSERT_NE(server, nullptr);
      EXPECT_EQ(str(*server, "name"), "POST /verify");
      const Span* client = parent_of(trace, *server);
      ASSERT_NE(client, nullptr);
      EXPECT_EQ(str(*client, "name"), "HTTP POST");
      const Span* rollout = parent_of(trace, *client);
      ASSERT_NE(rollout, nullptr);
      EXPECT_EQ(str(*rollout, "name"), "gym.rollout");
      EXPECT_EQ(attribute(s, "nemo.gym.rollout.id"), attribute(*rollout, "nemo.gym.rollout.id"));
      rollout_ids.insert(attribute(*rollout, "nemo.gym.rollout.id"));
    }
    for (const auto& s : trace) {
      if (str(s, "name") != "gym.model.responses") continue;
      const Span* server = parent_of(trace, s);
      ASSERT_NE(server, nullptr);
      EXPECT_EQ(str(*server, "name"), "POST /v1/responses");
      EXPECT_EQ(server_of(*server), "policy_model");
    }
  }
  EXPECT_EQ(rollout_traces, d.rows.size());
  std::set<std::string> expected;
  for (const auto& row : results) expected.insert(rollout_id(row));
  EXPECT_EQ(rollout_ids, expected);
}

// Ctrl-C in the middle of a run (default preset): the run's gym.job span still goes out, marked
// as cut off (`nemo.span.truncated`), and the rollouts that finished keep it as their trace's root.
TEST(Traces, AnInterruptedRunStillExportsItsJobSpanMarkedCutOff) {
  TempDir tmp;
  const Demo d = demo(tmp, 20);
  const std::string file = tmp.file("telemetry.jsonl");
  const std::string out = tmp.file("out.jsonl");
  std::string command = "env";
  for (const auto& e : console_env(file, "default")) command += " '" + e + "'";
  command += " " + gym_binary() + " eval run" + d.selectors + " --model-type replay_model" +
             " ++policy_model.responses_api_models.replay_model.replay_latency_ms=100" +
             " --input " + d.data.input.string() + " --output " + out +
             " --num-repeats 8 --concurrency 4 ++head_server.port=0";
  LoggedProcess run(command, tmp.file("eval.log"));
  for (int i = 0; i < 6000 && gym::test::complete_lines(out) == 0 && run.child().running(); ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_GT(gym::test::complete_lines(out), 0u) << run.output();
  run.child().signal(SIGINT);
  ASSERT_EQ(run.child().wait_exit(std::chrono::seconds(60)), 130) << run.output();
  const auto written = read_jsonl(out);
  ASSERT_LT(written.size(), d.rows.size() * 8) << "the run finished before the interrupt";

  const auto spans = spans_in(file);
  ASSERT_EQ(count_named(spans, "gym.job"), 1u) << run.output();
  const auto job = std::find_if(spans.begin(), spans.end(),
                                [](const Span& s) { return s.at("name") == "gym.job"; });
  EXPECT_EQ(attribute(*job, "nemo.span.truncated"), "true") << json::serialize(*job);
  ASSERT_EQ(job->at("events").as_array().size(), 1u) << json::serialize(*job);
  EXPECT_EQ(job->at("events").as_array()[0].at("name"), "nemo.span.truncated");
  // Every rollout written: its agent's gym.rollout is in the job's trace.
  std::set<std::string> in_job;
  for (const auto& s : spans)
    if (s.at("name") == "gym.rollout" && s.at("trace_id") == job->at("trace_id"))
      in_job.insert(attribute(s, "nemo.gym.rollout.id"));
  for (const auto& row : written) EXPECT_TRUE(in_job.count(rollout_id(row))) << rollout_id(row);
}

// default: one run-long gym.job span holds every rollout; verify spans are not in the preset.
TEST(Traces, DefaultPresetNestsEveryRolloutUnderOneJob) {
  TempDir tmp;
  const Demo d = demo(tmp, 2);
  const std::string file = tmp.file("telemetry.jsonl");
  ASSERT_EQ(
      eval_run(tmp, d, console_env(file, "default"), d.data.input.string(), tmp.file("out.jsonl")),
      0)
      << gym::test::read_text(tmp.file("eval.log"));
  const auto spans = spans_in(file);
  ASSERT_EQ(count_named(spans, "gym.job"), 1u);
  EXPECT_EQ(count_named(spans, "gym.verify"), 0u);
  EXPECT_EQ(count_named(spans, "gym.model.responses"), 0u);
  std::string job_trace;
  for (const auto& s : spans)
    if (s.at("name") == "gym.job") job_trace = str(s, "trace_id");
  const auto traces = by_trace(spans);
  const auto& job = traces.at(job_trace);
  Span root;
  ASSERT_TRUE(one_tree(job, &root));
  EXPECT_EQ(str(root, "name"), "gym.job");
  EXPECT_EQ(count_named(job, "gym.rollout"), d.rows.size());
  EXPECT_EQ(count_named(spans, "gym.rollout"), d.rows.size());  // none outside the job
}

// Samplers: always_off exports nothing; traceidratio decides per trace at its root, and the
// parent-based default downstream follows, so a trace is either complete or absent.
TEST(Traces, SamplersExportWhatTheyShould) {
  TempDir tmp;
  const Demo d = demo(tmp, 4);
  {
    const std::string file = tmp.file("off.jsonl");
    ASSERT_EQ(eval_run(tmp, d, console_env(file, "per_rollout", {"OTEL_TRACES_SAMPLER=always_off"}),
                       d.data.input.string(), tmp.file("off_out.jsonl")),
              0);
    EXPECT_TRUE(spans_in(file).empty());
    EXPECT_FALSE(read_lines(file).empty());  // the metrics still went out
  }
  {
    const std::string file = tmp.file("all.jsonl");
    ASSERT_EQ(
        eval_run(tmp, d,
                 console_env(file, "per_rollout",
                             {"OTEL_TRACES_SAMPLER=traceidratio", "OTEL_TRACES_SAMPLER_ARG=1"}),
                 d.data.input.string(), tmp.file("all_out.jsonl")),
        0);
    EXPECT_EQ(count_named(spans_in(file), "gym.rollout"), d.rows.size());
  }
  {
    const std::string file = tmp.file("half.jsonl");
    ASSERT_EQ(
        eval_run(tmp, d,
                 console_env(file, "per_rollout",
                             {"OTEL_TRACES_SAMPLER=traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.5"}),
                 d.data.input.string(), tmp.file("half_out.jsonl")),
        0);
    const auto spans = spans_in(file);
    for (const auto& [id, trace] : by_trace(spans)) {
      if (count_named(trace, "gym.rollout") == 0 && count_named(trace, "HTTP POST") == 0) continue;
      SCOPED_TRACE(id);
      EXPECT_TRUE(one_tree(trace));
      if (count_named(trace, "POST /run") > 0) {
        EXPECT_EQ(count_named(trace, "gym.rollout"), 1u);
        EXPECT_EQ(count_named(trace, "gym.verify"), 1u);
      }
    }
    EXPECT_LE(count_named(spans, "gym.rollout"), d.rows.size());
  }
}

// A failed rollout's failure row names its trace, and that trace holds the failing calls.
TEST(Traces, AFailureRowCarriesTheTraceIdOfItsRollout) {
  TempDir tmp;
  const Demo d = demo(tmp, 2);
  // One row the replay model has no recording for: the model answers an error, the agent 500.
  json::object stranger = d.rows.front();
  stranger["responses_create_params"].as_object()["input"] = "a question nobody recorded";
  stranger.erase("_ng_task_index");
  std::string input =
      gym::test::read_text(d.data.input.string()) + json::serialize(stranger) + "\n";
  const std::string in = tmp.write("with_stranger.jsonl", input);
  // The replay model looks for <stem>_rollouts.jsonl beside the input.
  std::filesystem::copy_file(d.data.rollouts, tmp.file("with_stranger_rollouts.jsonl"));
  const std::string file = tmp.file("telemetry.jsonl");
  const int code = eval_run(tmp, d, console_env(file, "per_rollout"), in, tmp.file("out.jsonl"));
  ASSERT_EQ(code, 3) << gym::test::read_text(tmp.file("eval.log"));
  const auto failures = read_jsonl(tmp.file("out_failures.jsonl"));
  ASSERT_EQ(failures.size(), 1u);
  ASSERT_TRUE(failures[0].contains("_ng_failure_trace_id")) << json::serialize(failures[0]);
  const std::string trace_id = std::string(failures[0].at("_ng_failure_trace_id").as_string());
  EXPECT_EQ(trace_id.size(), 32u);
  const auto traces = by_trace(spans_in(file));
  ASSERT_TRUE(traces.count(trace_id)) << "no span of trace " << trace_id;
  const auto& trace = traces.at(trace_id);
  EXPECT_TRUE(one_tree(trace));
  bool run_failed = false;
  for (const auto& s : trace)
    if (s.at("name") == "POST /run") {
      run_failed = attribute(s, "http.response.status_code") == "500" &&
                   s.at("status").at("code") == "error";
    }
  EXPECT_TRUE(run_failed) << "the agent's /run span does not show the failure";
  // Successful rows carry no failure fields.
  for (const auto& row : read_jsonl(tmp.file("out.jsonl")))
    EXPECT_FALSE(row.contains("_ng_failure_trace_id"));
}

// Interop: the official OpenTelemetry JS SDK starts a span and calls an agent's /run with
// its traceparent; every span of that rollout, in all three servers, is in the client's trace, the
// agent's SERVER span is the client span's child, and the rollout has the canonical shape.
TEST(Traces, AClientOfTheOpenTelemetryJsSdkOwnsTheRolloutsTrace) {
  std::string why;
  const std::string modules = gym::test::npm_install(
      {"otel_js_sdk",
       "@opentelemetry/api@1.9.0 @opentelemetry/sdk-trace-base@1.30.1 @opentelemetry/core@1.30.1",
       "@opentelemetry/sdk-trace-base/package.json"},
      &why);
  ASSERT_FALSE(modules.empty()) << "the OpenTelemetry JS SDK is required: " << why;
  const std::string node = gym::test::node_binary(&why);
  ASSERT_FALSE(node.empty()) << why;

  TempDir tmp;
  const Demo d = demo(tmp, 1);
  const std::string file = tmp.file("telemetry.jsonl");
  const gym::test::ReservedPort head;
  std::string command = "env";
  for (const auto& e : console_env(file, "per_rollout")) command += " '" + e + "'";
  command += " " + gym_binary() + " env start" + d.selectors +
             " --model-type replay_model ++input_jsonl_fpath=" + d.data.input.string() +
             " ++head_server.port=" + head.text();
  LoggedProcess deployment(command, tmp.file("env.log"));
  ASSERT_TRUE(deployment.wait_for("servers ready!")) << deployment.output();

  // The mcqa row and its agent's URL from the head server.
  const json::object* row = nullptr;
  for (const auto& r : d.rows)
    if (r.at("agent_ref").at("name") == "mcqa_simple_agent") row = &r;
  ASSERT_NE(row, nullptr);
  std::string agent_url;
  const auto listing = json::parse(gym::test::body_of(
      gym::test::http_raw(head.port(), "GET /server_instances HTTP/1.1\r\nHost: x\r\n\r\n")));
  for (const auto& v : listing.as_array())
    if (v.at("process_name") == "mcqa_simple_agent")
      agent_url = std::string(v.at("url").as_string());
  ASSERT_FALSE(agent_url.empty()) << json::serialize(listing);

  const std::string row_file = tmp.write("row.json", json::serialize(*row));
  const auto run = gym::test::run_command(node + " " + GYM_OTEL_CLIENT + " " + modules + " " +
                                          agent_url + " " + row_file);
  ASSERT_EQ(run.code, 0) << run.output;
  const auto answer = json::parse(run.output).as_object();
  ASSERT_EQ(answer.at("status").as_int64(), 200) << run.output;
  const std::string trace_id = std::string(answer.at("trace_id").as_string());
  const std::string client_span = std::string(answer.at("span_id").as_string());

  deployment.child().signal(SIGTERM);  // every server flushes its spans on the way out
  ASSERT_EQ(deployment.child().wait_exit(60s), 143) << deployment.output();

  const auto traces = by_trace(spans_in(file));
  ASSERT_TRUE(traces.count(trace_id)) << "no span joined the client's trace " << trace_id;
  const auto& trace = traces.at(trace_id);
  std::set<std::string> servers;
  int roots_at_client = 0;
  for (const auto& s : trace) {
    servers.insert(server_of(s));
    if (str(s, "parent_span_id") == client_span) {
      ++roots_at_client;
      EXPECT_EQ(str(s, "name"), "POST /run");
      EXPECT_EQ(str(s, "kind"), "server");
    }
  }
  EXPECT_EQ(roots_at_client, 1);
  EXPECT_EQ(servers, (std::set<std::string>{"mcqa_simple_agent", "mcqa", "policy_model"}));
  EXPECT_EQ(count_named(trace, "gym.rollout"), 1u);
  EXPECT_EQ(count_named(trace, "gym.verify"), 1u);
  EXPECT_GE(count_named(trace, "gym.model.responses"), 1u);
  // Every span of the rollout hangs off the client's span: the tree's only missing parent is it.
  std::set<std::string> ids;
  for (const auto& s : trace) ids.insert(str(s, "span_id"));
  for (const auto& s : trace) {
    const std::string parent = str(s, "parent_span_id");
    EXPECT_TRUE(ids.count(parent) || parent == client_span) << json::serialize(s);
  }
}

// ---- OTLP: what crossed the wire, decoded by the OpenTelemetry project's own code ------------

namespace {

// Base64 (protobuf.js writes bytes so) to lowercase hex.
std::string hex_of_base64(std::string_view b64) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : b64) {
    const auto at = kAlphabet.find(c);
    if (at == std::string::npos) continue;  // padding
    acc = acc << 6 | static_cast<std::uint32_t>(at);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) (out += kHex[b >> 4]) += kHex[b & 0xf];
  return out;
}

// A decoded KeyValue list as a plain object.
json::object plain(const json::value* list) {
  json::object out;
  if (!list || !list->is_array()) return out;
  for (const auto& kv : list->as_array()) {
    const auto& v = kv.at("value").as_object();
    const auto& [type, value] = *v.begin();
    out[kv.at("key").as_string()] =
        type == "intValue" ? json::value(std::stoll(std::string(value.as_string()))) : value;
  }
  return out;
}

// The spans of every decoded ExportTraceServiceRequest, in the console line's shape.
// With `logs`, the log records of every decoded ExportLogsServiceRequest too, each with its
// process's resource as "resource".
std::vector<Span> decoded_spans(const std::vector<gym::test::OtlpRequest>& requests,
                                std::vector<json::object>* logs = nullptr) {
  static const char* kKinds[] = {"unspecified", "internal", "server", "client"};
  std::vector<Span> out;
  for (const auto& r : requests) {
    if (!r.decoded.is_object()) continue;
    const auto& d = r.decoded.as_object();
    if (const auto* rl = d.if_contains("resourceLogs"); rl && logs) {
      for (const auto& res : rl->as_array())
        for (const auto& sl : res.at("scopeLogs").as_array())
          for (const auto& rec : sl.at("logRecords").as_array()) {
            json::object o = rec.as_object();
            o["resource"] = plain(res.at("resource").as_object().if_contains("attributes"));
            logs->push_back(std::move(o));
          }
    }
    const auto* rs = d.if_contains("resourceSpans");
    if (!rs) continue;
    for (const auto& res : rs->as_array()) {
      const json::object resource = plain(res.at("resource").as_object().if_contains("attributes"));
      for (const auto& ss : res.at("scopeSpans").as_array())
        for (const auto& s : ss.at("spans").as_array()) {
          const auto& o = s.as_object();
          Span span;
          span["trace_id"] = hex_of_base64(o.at("traceId").as_string());
          span["span_id"] = hex_of_base64(o.at("spanId").as_string());
          const auto* parent = o.if_contains("parentSpanId");
          span["parent_span_id"] = parent ? hex_of_base64(parent->as_string()) : std::string();
          span["name"] = o.at("name");
          span["kind"] = kKinds[o.at("kind").to_number<int>() & 3];
          span["attributes"] = plain(o.if_contains("attributes"));
          span["resource"] = resource;
          out.push_back(std::move(span));
        }
    }
  }
  return out;
}

}  // namespace

class OtlpTraces : public ::testing::TestWithParam<std::string> {};

// Over every protocol, the decoder of the OpenTelemetry JS project reads our spans, and they form
// the same per-rollout trees as the console lines.
TEST_P(OtlpTraces, EveryRolloutIsOneTreeDecodedByOpenTelemetrysOwnCode) {
  const std::string protocol = GetParam();
  gym::test::OtlpReceiver::Options options;
  if (protocol == "grpc") options.transport = gym::test::OtlpReceiver::Transport::grpc;
  gym::test::OtlpReceiver receiver(options);
  ASSERT_EQ(receiver.error(), "") << "the OTLP receiver is required";
  TempDir tmp;
  const Demo d = demo(tmp, 2);
  // Metrics at the default interval (10 s); spans of every rollout and log records.
  auto env = gym::test::collector_env(receiver.endpoint(), protocol, 10000);
  for (const char* e : {"NEMO_GYM_OTEL_EXPORTER=otlp", "NEMO_GYM_OTEL_SPAN_GROUPS=per_rollout",
                        "NEMO_GYM_OTEL_LOGS_ENABLED=1", "OTEL_BSP_SCHEDULE_DELAY=200"})
    env.push_back(e);
  std::string command = "env";
  for (const auto& e : env) command += " '" + e + "'";
  command += " timeout 300 " + gym_binary() + " eval run" + d.selectors +
             " --model-type replay_model --input " + d.data.input.string() + " --output " +
             tmp.file("out.jsonl") +
             " --concurrency 4 ++head_server.port=0 ++uvicorn_logging_show_200_ok=true >" +
             tmp.file("eval.log") + " 2>&1";
  ASSERT_EQ(gym::test::run_command(command).code, 0) << gym::test::read_text(tmp.file("eval.log"));
  ASSERT_TRUE(receiver.sync());
  for (const auto& r : receiver.requests()) EXPECT_EQ(r.error, "") << r.path();

  std::vector<json::object> logs;
  const auto spans = decoded_spans(receiver.requests(), &logs);
  std::size_t rollout_traces = 0;
  for (const auto& [id, trace] : by_trace(spans)) {
    if (count_named(trace, "gym.rollout") == 0) continue;
    ++rollout_traces;
    SCOPED_TRACE(id);
    Span root;
    EXPECT_TRUE(one_tree(trace, &root));
    EXPECT_EQ(str(root, "kind"), "client");
    EXPECT_EQ(count_named(trace, "gym.verify"), 1u);
    EXPECT_GE(count_named(trace, "gym.model.responses"), 1u);
    std::set<std::string> servers;
    for (const auto& s : trace) servers.insert(server_of(s));
    EXPECT_EQ(servers.size(), 4u);  // orchestrator, agent, model, resources server
  }
  EXPECT_EQ(rollout_traces, d.rows.size());

  // logs_enabled: the INFO records of every server process as OTLP log records (each logs
  // its shutdown on SIGTERM, after its telemetry started).
  std::set<std::string> logging, serving;
  for (const auto& rec : logs) {
    EXPECT_GE(rec.at("severityNumber").to_number<int>(), 9);
    EXPECT_TRUE(rec.at("body").as_object().contains("stringValue"));
    if (rec.at("body").at("stringValue") == "received signal 15, shutting down") {
      EXPECT_EQ(rec.at("severityText"), "INFO");
      logging.insert(std::string(rec.at("resource").at("nemo.gym.server.name").as_string()));
    }
  }
  for (const auto& s : spans)
    if (server_of(s) != "orchestrator") serving.insert(server_of(s));
  EXPECT_EQ(serving.size(), 7u);  // three agents, three resources servers, the model
  EXPECT_EQ(logging, serving);

  // An access-log line (uvicorn_logging_show_200_ok) carries the ids of its request's SERVER span.
  std::map<std::string, const Span*> by_id;
  for (const auto& s : spans) by_id[str(s, "span_id")] = &s;
  std::size_t verify_lines = 0;
  for (const auto& rec : logs) {
    if (rec.at("body").at("stringValue") != "POST /verify 200") continue;
    ++verify_lines;
    ASSERT_TRUE(rec.contains("spanId") && rec.contains("traceId")) << json::serialize(rec);
    const auto it = by_id.find(hex_of_base64(rec.at("spanId").as_string()));
    ASSERT_NE(it, by_id.end()) << json::serialize(rec);
    EXPECT_EQ(str(*it->second, "name"), "POST /verify");
    EXPECT_EQ(str(*it->second, "trace_id"), hex_of_base64(rec.at("traceId").as_string()));
  }
  EXPECT_EQ(verify_lines, d.rows.size());
}

INSTANTIATE_TEST_SUITE_P(Protocols, OtlpTraces,
                         ::testing::Values("http/protobuf", "http/json", "grpc"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == '/') c = '_';
                           return name;
                         });
