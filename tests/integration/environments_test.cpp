// The environments a user brings (issue 15; docs/guides/adding-an-environment.md): every
// environment folder's own example data through `gym eval run --split example`, external (Python)
// servers started from their folders beside the built-in ones, and what a broken external server
// looks like.
#include "files.h"
#include "process.h"
#include "replay_input.h"
#include "reserved_port.h"
#include "rollout_rows.h"
#include "temp_dir.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
namespace json = boost::json;
using gym::test::LoggedProcess;
using gym::test::read_jsonl;
using gym::test::read_lines;
using gym::test::read_text;
using gym::test::RowKey;
using gym::test::TempDir;

namespace {

const fs::path kEnvironments = fs::path(GYM_SOURCE_ROOT) / "environments";
const fs::path kTemplate = kEnvironments / "python_example";

std::string gym_binary() { return gym::test::build_path("src/cli/gym"); }

// The servers' python3 is Debian's, which has FastAPI (scripts/setup.sh installs it); a python3
// earlier in PATH (pyenv, conda) usually has not.
std::string debian_python_path() {
  const char* path = std::getenv("PATH");
  return "PATH=/usr/bin:/bin" + (path ? ":" + std::string(path) : std::string());
}

// `gym <args>` run in `cwd` to completion; stdout and stderr together.
gym::test::CommandResult run_gym(const std::string& args, const std::string& cwd,
                                 const std::string& env = debian_python_path()) {
  return gym::test::run_command("cd " + cwd + " && " + env + " " + gym_binary() + " " + args +
                                " 2>&1");
}

// Every environment folder that ships example data: the preset, data/example.jsonl and the
// rollouts recorded for it.
std::vector<std::string> environments_with_examples() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kEnvironments)) {
    const auto name = entry.path().filename().string();
    if (fs::exists(entry.path() / "configs" / (name + ".yaml")) &&
        fs::exists(entry.path() / "data" / "example.jsonl") &&
        fs::exists(entry.path() / "data" / "example_rollouts.jsonl"))
      names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

json::array normalized_input(const json::object& row) {
  return gym::test::normalized_items(row.at("responses_create_params").at("input"));
}

// The recorded row whose normalised input is that of `row`.
const json::object* recorded_row_for(const json::object& row,
                                     const std::vector<json::object>& recorded) {
  const auto input = normalized_input(row);
  for (const auto& candidate : recorded)
    if (gym::test::same_json(normalized_input(candidate), input)) return &candidate;
  return nullptr;
}

// Fields of a rollout row that are not the environment's verdict.
bool is_row_bookkeeping(std::string_view key) {
  return key == "responses_create_params" || key == "response" || key == "agent_ref" ||
         key == "_ng_task_index" || key == "_ng_rollout_index";
}

// `gym env start` of a deployment with its head server on a port of its own.
class Deployment {
 public:
  Deployment(const std::string& args, const std::string& log, const std::string& cwd)
      : proc_("env -C " + cwd + " " + debian_python_path() + " " + gym_binary() + " env start " +
                  args + " ++head_server.port=" + std::to_string(head_.port()),
              log) {}
  bool ready() { return proc_.wait_for("servers ready!"); }
  int head_port() const { return head_.port(); }
  LoggedProcess& proc() { return proc_; }
  json::object instance(const std::string& name) {
    auto raw =
        gym::test::http_raw(head_.port(), "GET /server_instances HTTP/1.1\r\nHost: x\r\n\r\n");
    auto listing = json::parse(gym::test::body_of(raw));
    for (auto& v : listing.as_array())
      if (v.at("process_name").as_string() == name) return v.as_object();
    return {};
  }

 private:
  gym::test::ReservedPort head_;
  LoggedProcess proc_;
};

// A folder of the user's own servers: <root>/resources_servers/<name>/ with `app` as app.py, and
// a config that runs it as the instance `<name>_env`.
std::string write_user_server(const TempDir& tmp, const std::string& name, const std::string& app) {
  const fs::path folder = fs::path(tmp.path()) / "resources_servers" / name;
  fs::create_directories(folder);
  std::ofstream(folder / "app.py") << app;
  const std::string config = tmp.file(name + ".yaml");
  std::ofstream(config) << name << "_env:\n  resources_servers:\n    " << name
                        << ":\n      entrypoint: app.py\n      domain: other\n";
  return config;
}

class ExampleSplit : public ::testing::TestWithParam<std::string> {};

}  // namespace

// Issue 15.4: `gym eval run --split example` works for every environment, from any directory,
// with the rollouts the folder ships: the replay model finds data/example_rollouts.jsonl beside
// the preset's data/example.jsonl, and every reward and verifier field is reproduced.
TEST_P(ExampleSplit, ReproducesTheShippedRollouts) {
  const std::string env = GetParam();
  TempDir tmp;
  auto r = run_gym("eval run --resources-server " + env +
                       " --model-type replay_model --split example --output out/" + env +
                       ".jsonl ++head_server.port=0",
                   tmp.path());
  ASSERT_EQ(r.code, 0) << r.output;
  const auto out = tmp.file("out/" + env + ".jsonl");
  EXPECT_TRUE(read_lines(tmp.file("out/" + env + "_failures.jsonl")).empty())
      << read_text(tmp.file("out/" + env + "_failures.jsonl"));
  auto inputs = read_jsonl((kEnvironments / env / "data" / "example.jsonl").string());
  auto recorded = read_jsonl((kEnvironments / env / "data" / "example_rollouts.jsonl").string());
  auto rows = read_jsonl(out);
  ASSERT_EQ(rows.size(), inputs.size()) << r.output;
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    const auto* want = recorded_row_for(row, recorded);
    ASSERT_NE(want, nullptr) << env << ": no shipped rollout has the input of "
                             << json::serialize(row.at("responses_create_params"));
    const std::string where = env + " task " + std::to_string(gym::test::key_of(row).first);
    for (const auto& kv : *want) {
      if (is_row_bookkeeping(kv.key())) continue;
      const auto* got = row.if_contains(kv.key());
      ASSERT_NE(got, nullptr) << where << ": no " << kv.key();
      EXPECT_TRUE(gym::test::same_json(*got, kv.value()))
          << where << " " << kv.key() << ": " << json::serialize(*got) << " vs shipped "
          << json::serialize(kv.value());
    }
  }
  EXPECT_TRUE(fs::exists(tmp.file("out/" + env + "_aggregate_metrics.json")));
}

INSTANTIATE_TEST_SUITE_P(EveryEnvironment, ExampleSplit,
                         ::testing::ValuesIn(environments_with_examples()),
                         [](const auto& info) { return info.param; });

// The built-in environments and the Python template are all there (a folder that lost its data
// would silently drop out of ExampleSplit otherwise).
TEST(ExampleSplitCoverage, EveryEnvironmentFolderShipsExampleData) {
  std::vector<std::string> without;
  for (const auto& entry : fs::directory_iterator(kEnvironments)) {
    if (!entry.is_directory()) continue;
    const auto name = entry.path().filename().string();
    if (!fs::exists(entry.path() / "data" / "example.jsonl") ||
        !fs::exists(entry.path() / "data" / "example_rollouts.jsonl"))
      without.push_back(name);
  }
  EXPECT_TRUE(without.empty()) << "environment folders without data/example.jsonl and "
                                  "data/example_rollouts.jsonl: "
                               << json::serialize(json::value_from(without));
  auto names = environments_with_examples();
  for (const char* expected : {"mcqa", "python_example", "string_match", "xlam_fc"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
}

// Issue 15.1/15.2: one `gym eval run` with an external Python resources server and a built-in one
// side by side, built-in agents and model. The calculator counts its calls per session, so the
// counts in the rows show the agent carried the Python server's session cookie from /seed_session
// through the tool calls to /verify.
TEST(ExternalServer, PythonTemplateBesideABuiltInEnvironmentInOneRun) {
  TempDir tmp;
  auto r = run_gym(
      "eval run --resources-server python_example --resources-server mcqa --model-type "
      "replay_model --split example --output out/mixed.jsonl ++head_server.port=0",
      tmp.path());
  ASSERT_EQ(r.code, 0) << r.output;
  auto rows = read_jsonl(tmp.file("out/mixed.jsonl"));
  ASSERT_EQ(rows.size(), 10u) << r.output;
  std::map<std::int64_t, json::object> python_rows;
  int mcqa_rows = 0;
  for (const auto& row : rows) {
    if (gym::test::agent_of(row) == "python_example_simple_agent")
      python_rows[gym::test::key_of(row).first] = row;
    else if (gym::test::agent_of(row) == "mcqa_simple_agent")
      ++mcqa_rows;
  }
  EXPECT_EQ(mcqa_rows, 5);
  ASSERT_EQ(python_rows.size(), 5u);
  // The template's example rows: calls made per task and the rewards the answers earn.
  const std::vector<std::int64_t> calls{1, 1, 1, 0, 2};
  const std::vector<double> rewards{1, 1, 0, 1, 1};
  for (std::int64_t t = 0; t < 5; ++t) {
    const auto& row = python_rows.at(t);
    EXPECT_EQ(row.at("calculator_calls").to_number<std::int64_t>(), calls[t]) << "task " << t;
    EXPECT_EQ(row.at("reward").to_number<double>(), rewards[t]) << "task " << t;
    // The tool outputs the model saw came from the Python server.
    for (const auto& item : row.at("response").at("output").as_array())
      if (item.at("type") == "function_call_output") {
        EXPECT_NE(item.at("output").as_string().find("\"result\""), std::string::npos);
      }
  }
  auto metrics = json::parse(read_text(tmp.file("out/mixed_aggregate_metrics.json"))).as_array();
  ASSERT_EQ(metrics.size(), 2u);
  for (const auto& m : metrics) {
    const auto& key = m.at("key_metrics").as_object();
    EXPECT_TRUE(gym::test::close_to(key.at("mean/reward").to_number<double>(), 0.8))
        << json::serialize(m);
    if (m.at("agent_ref").at("name") == "python_example_simple_agent") {
      EXPECT_TRUE(gym::test::close_to(key.at("mean/calculator_calls").to_number<double>(), 1.0));
    }
  }
}

// The head server lists an external server with its folder, and its /aggregate_metrics (the
// template's own Python code) answers exactly what gym-cpp's built-in default computes for the
// same rows (docs/reference/aggregate-metrics.md).
TEST(ExternalServer, ListedWithItsFolderAndAggregatesLikeTheBuiltInDefault) {
  TempDir tmp;
  Deployment d(
      "--resources-server python_example --resources-server example_single_tool_call "
      "--model-type replay_model ++input_jsonl_fpath=" +
          (kTemplate / "data" / "example.jsonl").string(),
      tmp.file("deploy.log"), tmp.path());
  ASSERT_TRUE(d.ready()) << d.proc().output();
  auto python = d.instance("python_example");
  ASSERT_FALSE(python.empty());
  EXPECT_EQ(python.at("dir_path"), json::value(kTemplate.string()));
  EXPECT_EQ(python.at("entrypoint"), json::value("app.py"));
  EXPECT_EQ(python.at("name"), json::value("python_example"));
  EXPECT_GT(python.at("pid").to_number<int>(), 0);
  EXPECT_TRUE(d.instance("example_single_tool_call").at("dir_path").is_null());
  const int python_port = python.at("port").to_number<int>();
  const int builtin_port = d.instance("example_single_tool_call").at("port").to_number<int>();

  // Its session cookie has the name a NeMo Gym client expects.
  auto seeded = gym::test::http_raw(python_port, gym::test::post("/seed_session", "{}"));
  EXPECT_EQ(gym::test::status_of(seeded), 200) << seeded;
  EXPECT_EQ(gym::test::header_of(seeded, "set-cookie")
                .rfind("PythonExampleResourcesServer___python_example=", 0),
            0u)
      << seeded;

  // Rows with repeated tasks, booleans, usage and a field only some rows have.
  json::array rows;
  int rollout = 0;
  for (auto row : read_jsonl((kTemplate / "data" / "example_rollouts.jsonl").string())) {
    row.erase("responses_create_params");
    for (int repeat = 0; repeat < 2; ++repeat) {
      auto copy = row;
      copy["_ng_rollout_index"] = repeat;
      copy["solved"] = copy.at("reward").to_number<double>() == 1.0;
      if (rollout++ % 3 == 0) copy["bonus"] = rollout;
      rows.push_back(std::move(copy));
    }
  }
  const std::string body = json::serialize(json::object{{"verify_responses", rows}});
  auto from_python = gym::test::http_raw(python_port, gym::test::post("/aggregate_metrics", body),
                                         std::chrono::seconds(30));
  auto from_builtin = gym::test::http_raw(builtin_port, gym::test::post("/aggregate_metrics", body),
                                          std::chrono::seconds(30));
  ASSERT_EQ(gym::test::status_of(from_python), 200) << from_python;
  ASSERT_EQ(gym::test::status_of(from_builtin), 200) << from_builtin;
  auto python_metrics = json::parse(gym::test::body_of(from_python));
  auto builtin_metrics = json::parse(gym::test::body_of(from_builtin));
  EXPECT_TRUE(gym::test::close_json(python_metrics, builtin_metrics))
      << "python: " << json::serialize(python_metrics)
      << "\nbuilt-in: " << json::serialize(builtin_metrics);
  // Key order is part of the file a user reads: the same in both.
  std::vector<std::string> python_keys, builtin_keys;
  for (const auto& kv : python_metrics.at("agent_metrics").as_object())
    python_keys.emplace_back(kv.key());
  for (const auto& kv : builtin_metrics.at("agent_metrics").as_object())
    builtin_keys.emplace_back(kv.key());
  EXPECT_EQ(python_keys, builtin_keys);
}

// A .venv in the server's folder is the interpreter, as upstream's `source .venv/bin/activate`
// makes it. Here the PATH is left as it is (its first python3 may lack FastAPI): the venv, made
// from Debian's python3 with its packages, is what runs the server.
TEST(ExternalServer, AVenvInTheFolderIsTheInterpreter) {
  TempDir tmp;
  const fs::path folder = fs::path(tmp.path()) / "resources_servers" / "python_example";
  fs::create_directories(folder);
  fs::copy(kTemplate / "app.py", folder / "app.py");
  ASSERT_EQ(gym::test::run_command("/usr/bin/python3 -m venv --without-pip "
                                   "--system-site-packages " +
                                   (folder / ".venv").string())
                .code,
            0);
  const char* path = std::getenv("PATH");
  auto r = run_gym(
      "eval run --resources-server python_example --model-type replay_model --agent "
      "python_example_simple_agent --input " +
          (kTemplate / "data" / "example.jsonl").string() + " --output out.jsonl --search-dir " +
          tmp.path() + " ++head_server.port=0",
      tmp.path(), "PATH=" + std::string(path ? path : "/usr/bin:/bin"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find(".venv/bin/python app.py in " + folder.string()), std::string::npos)
      << r.output;
  EXPECT_EQ(read_jsonl(tmp.file("out.jsonl")).size(), 5u);
}

// Issue 15.1: an external server that crashes at start-up is reported like a built-in one: the
// instance, how it was started, its exit and its last output; nothing is left running.
TEST(ExternalServer, CrashAtStartUpNamesTheInstanceAndItsLastOutput) {
  TempDir tmp;
  const auto config = write_user_server(tmp, "broken",
                                        "print('loading the answer key', flush=True)\n"
                                        "raise RuntimeError('answer key missing')\n");
  auto r = run_gym(
      "env start --config " + config + " --search-dir " + tmp.path() + " ++head_server.port=0",
      tmp.path());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("error: server broken_env (python3 app.py in " + tmp.path() +
                          "/resources_servers/broken) exited during start-up with code 1"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("loading the answer key"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("RuntimeError: answer key missing"), std::string::npos) << r.output;
}

// Issue 27.15: a server whose Python cannot import its modules (the first python3 on PATH
// without FastAPI, typically) is reported with the interpreter that ran, by its full path, and
// the two fixes: a .venv in its folder (the path gym-cpp would run) or Debian's packages, from
// its requirements.txt and the missing module.
TEST(ExternalServer, AMissingModuleNamesTheInterpreterAndBothFixes) {
  TempDir tmp;
  const auto config = write_user_server(tmp, "needs_pkg", "import gym_cpp_absent_module\n");
  const fs::path folder = fs::path(tmp.path()) / "resources_servers" / "needs_pkg";
  std::ofstream(folder / "requirements.txt")
      << "# what it imports\nfastapi>=0.100\nuvicorn[standard]\n"
         "PyYAML\n";
  auto r = run_gym(
      "env start --config " + config + " --search-dir " + tmp.path() + " ++head_server.port=0",
      tmp.path(), "PATH=/usr/bin:/bin");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("ModuleNotFoundError"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("hint: its Python could not import 'gym_cpp_absent_module'. The "
                          "interpreter was /usr/bin/python3 (the first python3 on PATH"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("python3 -m venv " + folder.string() + "/.venv && " + folder.string() +
                          "/.venv/bin/pip install -r " + folder.string() + "/requirements.txt"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("gym-cpp then runs " + folder.string() + "/.venv/bin/python"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("sudo apt install python3-fastapi python3-uvicorn python3-yaml "
                          "python3-gym-cpp-absent-module"),
            std::string::npos)
      << r.output;

  // Another failure is not taken for a missing module.
  const auto other = write_user_server(tmp, "crashes", "raise RuntimeError('no key')\n");
  auto crash = run_gym(
      "env start --config " + other + " --search-dir " + tmp.path() + " ++head_server.port=0",
      tmp.path());
  EXPECT_EQ(crash.code, 2) << crash.output;
  EXPECT_EQ(crash.output.find("hint: its Python"), std::string::npos) << crash.output;
}

// A copy of the template in <tmp>/resources_servers/python_example/ (found before the bundled
// one through --search-dir) with `from` replaced by `to` in its app.py.
void write_patched_template(const TempDir& tmp, const std::string& from, const std::string& to) {
  const fs::path folder = fs::path(tmp.path()) / "resources_servers" / "python_example";
  fs::create_directories(folder);
  std::string app = read_text((kTemplate / "app.py").string());
  const auto at = app.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  app.replace(at, from.size(), to);
  std::ofstream(folder / "app.py") << app;
}

// Issue 27.15: a Python server's 500 is not reported as the agent's: the failure cause names the
// inner server's instance and route the agent called.
TEST(ExternalServer, AFailingRouteOfAPythonServerIsNamedInTheCause) {
  TempDir tmp;
  write_patched_template(tmp, "    async def verify(request: Request):\n",
                         "    async def verify(request: Request):\n"
                         "        raise RuntimeError('the verifier crashed')\n");
  auto r = run_gym(
      "eval run --resources-server python_example --model-type replay_model --split example "
      "--limit 1 --output out.jsonl --search-dir " +
          tmp.path() + " ++head_server.port=0",
      tmp.path());
  EXPECT_NE(r.code, 0) << r.output;
  auto failures = read_jsonl(tmp.file("out_failures.jsonl"));
  ASSERT_FALSE(failures.empty()) << r.output;
  const auto cause = std::string(failures.front().at("_ng_failure_cause").as_string());
  EXPECT_EQ(cause,
            "HTTP 500: Internal Server Error (from python_example POST /verify, called by "
            "SimpleAgent___python_example_simple_agent)")
      << r.output;
}

// Issue 27.15: a resources server written for an older NeMo Gym has no /aggregate_metrics; the
// run still ends with NeMo Gym's default aggregate, computed by the agent, and says so.
TEST(ExternalServer, WithoutAggregateMetricsTheDefaultIsComputedAndNoted) {
  TempDir tmp;
  write_patched_template(tmp, "@app.post(\"/aggregate_metrics\")",
                         "@app.post(\"/not_aggregate_metrics\")");
  auto r = run_gym(
      "eval run --resources-server python_example --model-type replay_model --split example "
      "--output out.jsonl --search-dir " +
          tmp.path() + " ++head_server.port=0",
      tmp.path());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("note: python_example answered HTTP 404 to POST /aggregate_metrics; "
                          "the aggregate metrics of python_example_simple_agent are NeMo Gym's "
                          "default computation"),
            std::string::npos)
      << r.output;
  auto entries = json::parse(read_text(tmp.file("out_aggregate_metrics.json")));
  ASSERT_EQ(entries.as_array().size(), 1u);
  const auto& key = entries.as_array()[0].at("key_metrics");
  EXPECT_TRUE(gym::test::close_to(key.at("mean/reward").to_number<double>(), 0.8)) << key;
  EXPECT_TRUE(gym::test::close_to(key.at("mean/calculator_calls").to_number<double>(), 1.0)) << key;
}

// A server that hangs at start-up, or listens elsewhere than the port its config gives it, is
// named with the URL that did not answer and its last output once the readiness timeout is up,
// and is stopped (no orphan).
TEST(ExternalServer, HangOrWrongPortAtStartUpIsReportedAfterTheReadinessTimeout) {
  TempDir tmp;
  const auto config = write_user_server(
      tmp, "elsewhere",
      "import http.server, socketserver, sys\n"
      "server = socketserver.TCPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)\n"
      "print('serving on port', server.server_address[1], flush=True)\n"
      "server.serve_forever()\n");
  auto r = run_gym("env start --config " + config + " --search-dir " + tmp.path() +
                       " ++head_server.port=0 ++server_readiness_timeout_seconds=3",
                   tmp.path());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("servers not ready after server_readiness_timeout_seconds=3"),
            std::string::npos)
      << r.output;
  const auto at = r.output.find("elsewhere_env (pid ");
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_NE(r.output.find("does not answer GET / on http://127.0.0.1:", at), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("serving on port"), std::string::npos) << r.output;
  const pid_t pid = std::atoi(r.output.c_str() + at + std::string("elsewhere_env (pid ").size());
  ASSERT_GT(pid, 0);
  EXPECT_NE(::kill(pid, 0), 0) << "the server outlived its deployment";
}

// `gym list` shows a NeMo Gym-style folder's environments first, with where they come from and
// how an external one runs, then the bundled ones (the template among them, as external).
TEST(ExternalServer, GymListShowsTheUsersEnvironmentsAndWhichAreExternal) {
  TempDir tmp;
  const fs::path folder = fs::path(tmp.path()) / "resources_servers" / "my_env";
  fs::create_directories(folder / "configs");
  std::ofstream(folder / "app.py") << "\n";
  std::ofstream(folder / "configs" / "my_env.yaml")
      << "my_env:\n  resources_servers:\n    my_env:\n      entrypoint: app.py\n"
         "      domain: other\n";
  auto r = run_gym("list", tmp.path());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("my_env"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("external: app.py in " + folder.string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("external: app.py in " + kTemplate.string()), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("  mcqa\n"), std::string::npos) << r.output;
  auto j = run_gym("list --json", tmp.path());
  ASSERT_EQ(j.code, 0) << j.output;
  auto listing = json::parse(j.output.substr(j.output.find('{')));
  bool found = false;
  for (const auto& e : listing.at("environment_sources").as_array())
    if (e.at("name") == "my_env") {
      found = true;
      EXPECT_EQ(e.at("external"), json::value("app.py in " + folder.string()));
    } else if (e.at("name") == "mcqa") {
      EXPECT_TRUE(e.at("external").is_null());
    }
  EXPECT_TRUE(found) << j.output;
}

// Issue 15.3: `gym env init NAME` writes exactly the folder the build instantiates from the same
// template as template_check and builds and tests (tests/unit/environments/CMakeLists.txt), so a
// new environment builds and passes as written; it never overwrites and refuses names that
// cannot work.
TEST(EnvInit, WritesTheFolderTheBuildChecksAndNeverOverwrites) {
  TempDir tmp;
  auto r = run_gym("env init template_check --into " + tmp.path(), tmp.path());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("TemplateCheckResourcesServer"), std::string::npos) << r.output;
  const fs::path written = fs::path(tmp.path()) / "template_check";
  const fs::path checked = fs::path(GYM_BUILD_DIR) / "tests/unit/environments/template_check";
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(checked)) {
    if (!entry.is_regular_file()) continue;
    ++files;
    const auto relative = fs::relative(entry.path(), checked);
    EXPECT_EQ(read_text((written / relative).string()), read_text(entry.path().string()))
        << relative;
  }
  EXPECT_EQ(files, 7u);
  std::size_t written_files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(written))
    written_files += entry.is_regular_file();
  EXPECT_EQ(written_files, files);

  // Again: refused, and the folder is as it was.
  std::ofstream(written / "template_check.cpp", std::ios::app) << "// my change\n";
  auto again = run_gym("env init template_check --into " + tmp.path(), tmp.path());
  EXPECT_EQ(again.code, 1) << again.output;
  EXPECT_NE(again.output.find("already exists; nothing was written"), std::string::npos);
  EXPECT_NE(read_text((written / "template_check.cpp").string()).find("// my change"),
            std::string::npos);
  for (const char* name : {"mcqa", "simple_agent", "Word-Count", "9lives"}) {
    auto bad = run_gym(std::string("env init ") + name + " --into " + tmp.path(), tmp.path());
    EXPECT_EQ(bad.code, 1) << name << ": " << bad.output;
    EXPECT_FALSE(fs::exists(fs::path(tmp.path()) / name)) << name;
  }
}

// Issue 15.5: rows made for an environment the deployment does not serve are never run through
// another one silently: the error names the agents there are and how to map on purpose, and the
// mapping it suggests works.
TEST(WrongEnvironment, RowsForAnotherAgentAreAnErrorThatSaysHowToMap) {
  TempDir tmp;
  const std::string rows = tmp.file("quiz.jsonl");
  {
    std::ofstream out(rows);
    for (const auto& row :
         read_jsonl((kEnvironments / "mcqa" / "data" / "example.jsonl").string())) {
      auto copy = row;
      copy["agent_ref"] = json::object{{"type", "responses_api_agents"}, {"name", "quiz_agent"}};
      out << json::serialize(copy) << "\n";
    }
  }
  const std::string run = "eval run --resources-server mcqa --model-type replay_model --input " +
                          rows + " --output out/q.jsonl ++head_server.port=0";
  auto r = run_gym(run, tmp.path());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("agent 'quiz_agent' is not a responses_api_agents instance"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("configured agents: mcqa_simple_agent"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("++quiz_agent={_copy: mcqa_simple_agent}"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(tmp.file("out/q.jsonl")));
  // The mapping, asked for explicitly, runs the rows through mcqa's agent (and its rewards).
  auto mapped =
      run_gym(run + " '++quiz_agent={_copy: mcqa_simple_agent}'" +
                  " ++policy_model.responses_api_models.replay_model."
                  "rollouts_jsonl_fpaths=[" +
                  (kEnvironments / "mcqa" / "data" / "example_rollouts.jsonl").string() + "]",
              tmp.path());
  ASSERT_EQ(mapped.code, 0) << mapped.output;
  auto out = read_jsonl(tmp.file("out/q.jsonl"));
  ASSERT_EQ(out.size(), 5u);
  for (const auto& row : out) EXPECT_EQ(gym::test::agent_of(row), "quiz_agent");
}

// External servers work for every server type: a model server and an agent written in Python
// (standard library only) run from their folders beside the built-in mcqa resources server, and the
// agent carries mcqa's session cookie from /seed_session to /verify.
TEST(ExternalServer, AModelServerAndAnAgentCanBeExternalToo) {
  TempDir tmp;
  const std::string common =
      "import json, os, sys, urllib.request, yaml\n"
      "from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer\n"
      "config = yaml.safe_load(os.environ['NEMO_GYM_CONFIG_DICT'])\n"
      "name = os.environ['NEMO_GYM_CONFIG_PATH']\n"
      "def block(n):\n"
      "    (t, impls), = config[n].items()\n"
      "    (i, b), = impls.items()\n"
      "    return b\n"
      "me = block(name)\n"
      "def serve(handle):\n"
      "    class H(BaseHTTPRequestHandler):\n"
      "        def log_message(self, *a): pass\n"
      "        def reply(self, code, body, headers=()):\n"
      "            data = json.dumps(body).encode()\n"
      "            self.send_response(code)\n"
      "            for k, v in headers: self.send_header(k, v)\n"
      "            self.send_header('Content-Type', 'application/json')\n"
      "            self.send_header('Content-Length', str(len(data)))\n"
      "            self.end_headers()\n"
      "            self.wfile.write(data)\n"
      "        def do_GET(self): self.reply(200, {'status': 'ok'})\n"
      "        def do_POST(self):\n"
      "            body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))\n"
      "            self.reply(*handle(self.path, body))\n"
      "    print('serving', name, flush=True)\n"
      "    ThreadingHTTPServer((me['host'], int(me['port'])), H).serve_forever()\n";
  const fs::path model = fs::path(tmp.path()) / "responses_api_models" / "boxed_c_model";
  const fs::path agent = fs::path(tmp.path()) / "responses_api_agents" / "one_turn_agent";
  fs::create_directories(model);
  fs::create_directories(agent);
  std::ofstream(model / "app.py")
      << common
      << "def handle(path, body):\n"
         "    msg = {'id': 'msg_1', 'type': 'message', 'role': 'assistant', 'status': "
         "'completed', 'content': [{'type': 'output_text', 'text': 'I pick \\\\boxed{C}', "
         "'annotations': []}]}\n"
         "    return 200, {'id': 'resp_1', 'object': 'response', 'created_at': 0, 'model': "
         "'boxed-c', 'output': [msg], 'status': 'completed', 'parallel_tool_calls': True, "
         "'tool_choice': 'auto', 'tools': []}\n"
         "serve(handle)\n";
  std::ofstream(agent / "app.py")
      << common
      << "def url(ref):\n"
         "    b = block(ref['name'])\n"
         "    return f\"http://{b['host']}:{b['port']}\"\n"
         "def post(u, body, cookie=None):\n"
         "    req = urllib.request.Request(u, json.dumps(body).encode(), {'Content-Type': "
         "'application/json', **({'Cookie': cookie} if cookie else {})})\n"
         "    with urllib.request.urlopen(req) as r:\n"
         "        return json.loads(r.read()), r.headers.get('Set-Cookie')\n"
         "def handle(path, row):\n"
         "    res, model = url(me['resources_server']), url(me['model_server'])\n"
         "    if path == '/aggregate_metrics':\n"
         "        return 200, post(res + path, row)[0]\n"
         "    _, cookie = post(res + '/seed_session', row)\n"
         "    cookie = cookie.split(';')[0] if cookie else None\n"
         "    response, _ = post(model + '/v1/responses', row['responses_create_params'])\n"
         "    verified, _ = post(res + '/verify', {**row, 'response': response}, cookie)\n"
         "    verified['had_cookie'] = cookie is not None\n"
         "    return 200, verified\n"
         "serve(handle)\n";
  const std::string config = tmp.file("mixed.yaml");
  std::ofstream(config) << "policy_model:\n  responses_api_models:\n    boxed_c_model:\n"
                           "      entrypoint: app.py\n"
                           "quiz_agent:\n  responses_api_agents:\n    one_turn_agent:\n"
                           "      entrypoint: app.py\n"
                           "      resources_server: {type: resources_servers, name: mcqa}\n"
                           "      model_server: {type: responses_api_models, name: policy_model}\n";
  auto r = run_gym("eval run --resources-server mcqa --config " + config + " --search-dir " +
                       tmp.path() + " --agent quiz_agent --input " +
                       (kEnvironments / "mcqa" / "data" / "example.jsonl").string() +
                       " --output out/q.jsonl ++head_server.port=0",
                   tmp.path());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("(python3 app.py in " + model.string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(python3 app.py in " + agent.string()), std::string::npos) << r.output;
  auto rows = read_jsonl(tmp.file("out/q.jsonl"));
  ASSERT_EQ(rows.size(), 5u);
  // Golds B, C, A, D, C; "\\boxed{C}" is right for tasks 1 and 4 only (task 2 wants
  // "Answer:", task 3's box holds another letter).
  const std::vector<double> rewards{0, 1, 0, 0, 1};
  for (const auto& row : rows) {
    const auto task = gym::test::key_of(row).first;
    EXPECT_EQ(row.at("reward").to_number<double>(), rewards.at(task)) << "task " << task;
    EXPECT_EQ(row.at("extracted_answer"), task == 2 ? json::value() : json::value("C")) << task;
    EXPECT_EQ(row.at("had_cookie"), json::value(true));
  }
}

// A misspelt implementation with an entrypoint is not silently taken for an external server: the
// error names the built-in it resembles and the folders looked in.
TEST(ExternalServer, MisspeltImplementationIsAConfigErrorNotAnExternalServer) {
  TempDir tmp;
  const std::string config = tmp.file("typo.yaml");
  std::ofstream(config) << "quiz:\n  resources_servers:\n    mcqq:\n      entrypoint: app.py\n"
                           "      domain: knowledge\n";
  auto r = run_gym("env start --config " + config + " ++head_server.port=0", tmp.path());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("'mcqq' is not a built-in resources_servers implementation (did you "
                          "mean 'mcqa'?)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("no folder resources_servers/mcqq/ holding its entrypoint 'app.py'"),
            std::string::npos)
      << r.output;
}

// Issue 15.2: the Python server killed mid-run: the rollouts in flight and after fail as rows,
// none is lost, and `--resume` against a new deployment completes every rollout exactly once.
TEST(ExternalServer, KilledMidRunThenResumeCompletesEveryRolloutOnce) {
  TempDir tmp;
  const std::string input = (kTemplate / "data" / "example.jsonl").string();
  const std::string deployment_args =
      "--resources-server python_example --model-type replay_model ++input_jsonl_fpath=" + input +
      " ++global_http_retry_budget_seconds=3"
      " ++policy_model.responses_api_models.replay_model.replay_latency_ms=20" +
      std::string(gym::test::kDyingDeploymentPorts);
  const std::string out = tmp.file("r.jsonl");
  auto collect = [&](const Deployment& d, const std::string& extra) {
    return "env " + debian_python_path() + " " + gym_binary() +
           " eval run --no-serve ++head_server.port=" + std::to_string(d.head_port()) +
           " --input " + input + " --agent python_example_simple_agent --output " + out +
           " --num-repeats 30 --concurrency 16 ++deployment_unreachable_seconds=0" + extra;
  };
  std::set<RowKey> failed;
  {
    Deployment d(deployment_args, tmp.file("deploy1.log"), tmp.path());
    ASSERT_TRUE(d.ready()) << d.proc().output();
    const pid_t victim = d.instance("python_example").at("pid").to_number<int>();
    LoggedProcess collector(collect(d, ""), tmp.file("collect1.log"));
    for (int i = 0; i < 6000 && gym::test::complete_lines(out) == 0 && collector.child().running();
         ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_GT(gym::test::complete_lines(out), 0u) << collector.output();
    ASSERT_EQ(::kill(victim, SIGKILL), 0);
    EXPECT_EQ(d.proc().child().wait_exit(std::chrono::seconds(60)), 2) << d.proc().output();
    ASSERT_EQ(collector.child().wait_exit(std::chrono::seconds(300)), 3) << collector.output();
    std::set<RowKey> done;
    for (const auto& row : read_jsonl(out)) EXPECT_TRUE(done.insert(gym::test::key_of(row)).second);
    for (const auto& row : read_jsonl(tmp.file("r_failures.jsonl"))) {
      EXPECT_TRUE(failed.insert(gym::test::key_of(row)).second);
      EXPECT_FALSE(done.count(gym::test::key_of(row)));
    }
    EXPECT_GT(failed.size(), 0u);
    EXPECT_EQ(done.size() + failed.size(), 150u);
  }
  Deployment d(deployment_args, tmp.file("deploy2.log"), tmp.path());
  ASSERT_TRUE(d.ready()) << d.proc().output();
  LoggedProcess resume(collect(d, " --resume"), tmp.file("collect2.log"));
  ASSERT_EQ(resume.child().wait_exit(std::chrono::seconds(300)), 0) << resume.output();
  std::map<RowKey, int> seen;
  for (const auto& row : read_jsonl(out)) {
    ++seen[gym::test::key_of(row)];
    EXPECT_TRUE(row.contains("calculator_calls")) << json::serialize(row);
  }
  EXPECT_EQ(seen.size(), 150u);
  for (const auto& [key, n] : seen) EXPECT_EQ(n, 1) << key.first << "," << key.second;
}
