// `gym eval run` when things go wrong (issue 13, items 1-4): a run that cannot start leaves the
// earlier results alone, an empty or oversized input is an error that touches nothing, a stopped
// resources server yields failure rows instead of a hang, and a deployment that went away stops
// the collection with what to do next. Real gym processes on 127.0.0.1, ports chosen by the OS.
#include "conformance_dir.h"
#include "files.h"
#include "process.h"
#include "reserved_port.h"
#include "temp_dir.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

namespace fs = std::filesystem;
namespace json = boost::json;
using gym::test::ChildProcess;
using gym::test::LoggedProcess;
using gym::test::read_jsonl;
using gym::test::read_lines;
using gym::test::read_text;
using gym::test::TempDir;
using namespace std::chrono_literals;

namespace {

const std::string kEnv = "example_single_tool_call";
const std::string kAgent = "example_single_tool_call_simple_agent";

std::string gym_binary() { return gym::test::build_path("src/cli/gym"); }
std::string example_input() { return gym::test::conformance_dir() + "/" + kEnv + "/example.jsonl"; }
std::string example_rollouts() {
  return gym::test::conformance_dir() + "/" + kEnv + "/example_rollouts.jsonl";
}

::testing::AssertionResult have_conformance_data() {
  for (const auto& file : {example_input(), example_rollouts()})
    if (!fs::exists(file))
      return ::testing::AssertionFailure()
             << "NeMo Gym's conformance data is missing: " << file
             << ". Set GYM_CONFORMANCE_DIR (default ../shared/data/conformance).";
  return ::testing::AssertionSuccess();
}

// `gym <args>` to completion, stdout and stderr together; `timeout` turns a hang into a failure.
gym::test::CommandResult run_gym(const std::string& args) {
  return gym::test::run_command("timeout 300 " + gym_binary() + " " + args);
}

// `gym eval run` with its own servers of kEnv and the replay model (head port 0: the OS's choice).
std::string with_servers(int head_port) {
  return "eval run --resources-server " + kEnv + " --model-type replay_model --agent " + kAgent +
         " '++policy_model.responses_api_models.replay_model.rollouts_jsonl_fpaths=[" +
         example_rollouts() + "]' ++head_server.port=" + std::to_string(head_port);
}

// The files of an earlier run of <dir>/o.jsonl, and a check that they are unchanged.
class EarlierRun {
 public:
  explicit EarlierRun(const TempDir& tmp) {
    files_ = {{tmp.file("o.jsonl"), "{\"earlier\":\"rollout\"}\n"},
              {tmp.file("o_failures.jsonl"), "{\"earlier\":\"failure\"}\n"},
              {tmp.file("o_materialized_inputs.jsonl"), "{\"earlier\":\"input\"}\n"},
              {tmp.file("o_aggregate_metrics.json"), "[]\n"}};
    for (const auto& [path, text] : files_) std::ofstream(path) << text;
  }
  void expect_unchanged() const {
    for (const auto& [path, text] : files_) EXPECT_EQ(read_text(path), text) << path;
  }

 private:
  std::map<std::string, std::string> files_;
};

// A port of 127.0.0.1 held by this test: binding it fails for anyone else.
class BusyPort {
 public:
  BusyPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~BusyPort() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// `gym env start` of kEnv with the replay model and `extra` overrides.
class Deployment {
 public:
  Deployment(const std::string& extra, const std::string& log)
      : head_port_(own_head_.port()),
        proc_(gym_binary() + " env start --resources-server " + kEnv +
                  " --model-type replay_model ++input_jsonl_fpath=" + example_input() + " " +
                  extra + " ++head_server.port=" + std::to_string(head_port_),
              log) {}
  bool ready() { return proc_.wait_for("servers ready!"); }
  std::string head_override() const { return "++head_server.port=" + std::to_string(head_port_); }
  std::string head_url() const { return "http://127.0.0.1:" + std::to_string(head_port_); }
  LoggedProcess& proc() { return proc_; }
  // The pid of the server `name`, from the head server's /server_instances.
  pid_t pid_of(const std::string& name) {
    auto raw = gym::test::http_raw(head_port_, "GET /server_instances HTTP/1.1\r\nHost: x\r\n\r\n");
    const auto listing = json::parse(gym::test::body_of(raw));
    for (const auto& v : listing.as_array())
      if (v.at("process_name").as_string() == name)
        return static_cast<pid_t>(v.at("pid").to_number<int>());
    return -1;
  }

 private:
  gym::test::ReservedPort own_head_;
  int head_port_;
  LoggedProcess proc_;
};

std::size_t complete_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::size_t n = 0;
  for (char c; in.get(c);) n += c == '\n';
  return n;
}

}  // namespace

// ---- item 1: nothing is truncated before the run is certain to start ----------------------

TEST(EvalRunStart, BusyHeadPortLeavesTheEarlierResults) {
  ASSERT_TRUE(have_conformance_data());
  TempDir tmp;
  EarlierRun earlier(tmp);
  BusyPort busy;  // e.g. a `gym env start` already running, and --no-serve forgotten
  auto r = run_gym(with_servers(busy.port()) + " --input " + example_input() + " --output " +
                   tmp.file("o.jsonl"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_EQ(r.output.find("Clearing output fpath"), std::string::npos) << r.output;
  earlier.expect_unchanged();
}

TEST(EvalRunStart, EmptyInputIsAnErrorThatTouchesNothing) {
  ASSERT_TRUE(have_conformance_data());
  TempDir tmp;
  EarlierRun earlier(tmp);
  for (const std::string& text : {std::string(), std::string("\n \n")}) {
    auto input = tmp.write("empty.jsonl", text);
    auto r = run_gym(with_servers(0) + " --input " + input + " --output " + tmp.file("o.jsonl"));
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_NE(r.output.find(input + " has no rows"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("servers ready"), std::string::npos) << r.output;
    earlier.expect_unchanged();
  }
}

TEST(EvalRunStart, FreshRunThatStartsReplacesTheEarlierResults) {
  ASSERT_TRUE(have_conformance_data());
  TempDir tmp;
  EarlierRun earlier(tmp);
  auto r = run_gym(with_servers(0) + " --input " + example_input() + " --output " +
                   tmp.file("o.jsonl") + " --disable-aggregation");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(read_jsonl(tmp.file("o.jsonl")).size(), 5u);
  EXPECT_EQ(read_jsonl(tmp.file("o_materialized_inputs.jsonl")).size(), 5u);
  EXPECT_TRUE(read_lines(tmp.file("o_failures.jsonl")).empty());
  // No metrics this time: the earlier file described rollouts that are gone.
  EXPECT_FALSE(fs::exists(tmp.file("o_aggregate_metrics.json")));
}

// ---- item 4: an input line is bounded ----------------------------------------------------

TEST(EvalRunStart, InputLineLongerThanTheBodyLimitNamesTheLine) {
  ASSERT_TRUE(have_conformance_data());
  TempDir tmp;
  EarlierRun earlier(tmp);
  auto input = tmp.write("big.jsonl", read_lines(example_input()).at(0) + "\n" +
                                          "{\"responses_create_params\":{\"input\":\"" +
                                          std::string(5000, 'x') + "\"}}\n");
  auto r = run_gym(with_servers(0) + " --input " + input + " --output " + tmp.file("o.jsonl") +
                   " ++http_max_request_body_bytes=4096");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find(input + " line 2: longer than 4096 bytes"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("http_max_request_body_bytes"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("servers ready"), std::string::npos) << r.output;
  earlier.expect_unchanged();
}

// ---- item 2: a hung server yields failure rows ---------------------------------------------

TEST(EvalRunHang, StoppedResourcesServerGivesFailureRowsAndTheRunFinishes) {
  ASSERT_TRUE(have_conformance_data());
  TempDir tmp;
  // The agent gives up on the silent resources server after 2 s.
  Deployment d("++global_http_read_timeout_seconds=2", tmp.file("deploy.log"));
  ASSERT_TRUE(d.ready()) << d.proc().output();
  const pid_t resources = d.pid_of(kEnv);
  ASSERT_GT(resources, 0);
  ASSERT_EQ(::kill(resources, SIGSTOP), 0);
  const std::string out = tmp.file("o.jsonl");
  auto r = run_gym("eval run --no-serve " + d.head_override() + " --input " + example_input() +
                   " --agent " + kAgent + " --output " + out +
                   " --concurrency 2 ++global_http_read_timeout_seconds=60");
  ::kill(resources, SIGCONT);
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_TRUE(read_lines(out).empty()) << r.output;
  auto failures = read_jsonl(tmp.file("o_failures.jsonl"));
  ASSERT_EQ(failures.size(), 5u) << r.output;
  for (const auto& row : failures) {
    EXPECT_TRUE(row.contains("_ng_failure_class")) << json::serialize(row);
    EXPECT_NE(json::serialize(row).find("timed out"), std::string::npos) << json::serialize(row);
  }
}

// ---- item 3: a deployment that went away stops the collection -------------------------------

TEST(EvalRunDeadDeployment, NoServeStopsSoonWithTheUrlAndTheResumeCommand) {
  ASSERT_TRUE(have_conformance_data());
  TempDir tmp;
  Deployment d(
      std::string("++policy_model.responses_api_models.replay_model.replay_latency_ms=50") +
          gym::test::kDyingDeploymentPorts,
      tmp.file("deploy.log"));
  ASSERT_TRUE(d.ready()) << d.proc().output();
  const std::string out = tmp.file("o.jsonl");
  LoggedProcess collector(gym_binary() + " eval run --no-serve " + d.head_override() + " --input " +
                              example_input() + " --agent " + kAgent + " --output " + out +
                              " --num-repeats 400 --concurrency 64",
                          tmp.file("collect.log"));
  for (int i = 0; i < 6000 && complete_lines(out) == 0 && collector.child().running(); ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_GT(complete_lines(out), 0u) << collector.output();
  // The whole deployment dies: its servers go with the orchestrator.
  d.proc().child().signal(SIGKILL);
  // Default retry budget (300 s a rollout): only the watch can end this in time.
  ASSERT_EQ(collector.child().wait_exit(60s), 2) << collector.output();
  const std::string log = collector.output();
  EXPECT_NE(log.find("the deployment is gone: its head server " + d.head_url()), std::string::npos)
      << log;
  EXPECT_NE(log.find("deployment_unreachable_seconds"), std::string::npos) << log;
  EXPECT_NE(log.find("Collection stopped (exit code 2)"), std::string::npos) << log;
  EXPECT_NE(log.find(gym_binary() + " eval run --no-serve " + d.head_override()), std::string::npos)
      << log;
  EXPECT_NE(log.find("--concurrency 64 --resume"), std::string::npos) << log;
  // The periodic warning about refused connections names where they went.
  EXPECT_NE(log.find("refused or dropped connections so far in this process, the last to "
                     "http://127.0.0.1:"),
            std::string::npos)
      << log;
  EXPECT_LT(complete_lines(out), 2000u);
}
