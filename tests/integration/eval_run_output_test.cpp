// What `gym eval run` prints while it runs (issue 27 item 12): a server's line never lands on the
// progress bar's line (the run on a pseudo-terminal, its screen replayed), `-q` prints only
// warnings, errors and the result while the servers' output goes to log files, the orderly
// shutdown does not read like a failure, and `--json` leaves one JSON object on stdout. Every
// test runs gym, its servers and the fake endpoint (tests/support/fake_openai.cpp) as processes.
#include "files.h"
#include "live_deployment.h"
#include "process.h"
#include "temp_dir.h"
#include "text_search.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace json = boost::json;
using gym::test::FakeEndpoint;
using gym::test::read_text;
using gym::test::TempDir;
using gym::test::write_file;

namespace {

// A vLLM context-length refusal, once: vllm_model logs a warning (a server's line) mid-run.
constexpr const char* kContextRefusal =
    R"([{"status":400,"times":1,"body":{"object":"error","message":"This model's maximum )"
    R"(context length is 4096 tokens. However, you requested 9000 tokens.","type":)"
    R"("BadRequestError","code":400}}])";

std::string eval_command(const std::string& endpoint, const std::string& input,
                         const std::string& out, const std::string& extra = "") {
  return gym::test::live_eval_command(endpoint, input, out, extra);
}

using gym::test::contains;

// `command` under /bin/sh with stdout and stderr on a pseudo-terminal 200 columns wide: all it
// wrote there, and its exit code.
struct TtyRun {
  int code = -1;
  std::string output;
};
TtyRun run_on_tty(const std::string& command) {
  winsize size{};
  size.ws_col = 200;
  size.ws_row = 50;
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, &size);
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  TtyRun run;
  if (pid < 0) return run;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    char buf[4096];
    const auto n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO: every writer closed the terminal
    run.output.append(buf, static_cast<std::size_t>(n));
  }
  ::close(master);
  int status = 0;
  if (::waitpid(pid, &status, 0) == pid && WIFEXITED(status)) run.code = WEXITSTATUS(status);
  return run;
}

// The lines a terminal shows for `raw`: '\r' returns to the line's start, ESC [ K erases to its
// end, other escape sequences (colours) draw nothing, every other byte takes a column.
std::vector<std::string> screen_lines(const std::string& raw) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t cursor = 0;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '\n') {
      lines.push_back(line);
      line.clear();
      cursor = 0;
    } else if (c == '\r') {
      cursor = 0;
    } else if (c == '\033' && i + 1 < raw.size() && raw[i + 1] == '[') {
      std::size_t end = i + 2;
      while (end < raw.size() && !std::isalpha(static_cast<unsigned char>(raw[end]))) ++end;
      if (end < raw.size() && raw[end] == 'K') line.resize(std::min(cursor, line.size()));
      i = end;
    } else {
      if (cursor < line.size())
        line[cursor] = c;
      else
        line.push_back(c);
      ++cursor;
    }
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// `command` with stdout and stderr apart: {exit code, stdout}; stderr in the file `err`.
gym::test::CommandResult run_split(const std::string& command, const std::string& err) {
  return gym::test::run_command("( " + command + " 2>" + err + " )");
}

json::object last_json_line(const std::string& out) {
  auto text = out;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const auto nl = text.rfind('\n');
  return json::parse(nl == std::string::npos ? text : text.substr(nl + 1)).as_object();
}

}  // namespace

// A server's warning arrives while the bar is drawn: on the terminal it gets a line of its own,
// and the bar comes back below it.
TEST(EvalRunOutput, AServersLineNeverSharesALineWithTheProgressBar) {
  FakeEndpoint fake({"--delay-ms", "300"});
  fake.script(kContextRefusal);
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(4));
  const auto run = run_on_tty(eval_command(fake.base(), input, tmp.file("out.jsonl"),
                                           "--concurrency 1 --disable-aggregation"));
  EXPECT_EQ(run.code, 0) << run.output;
  bool warned = false, bar = false;
  for (const auto& line : screen_lines(run.output)) {
    const bool server_line = contains(line, "(policy_model) ") ||
                             contains(line, "(example_single_tool_call) ") ||
                             contains(line, "(example_single_tool_call_simple_agent) ");
    const bool bar_line = contains(line, "Collecting rollouts");
    EXPECT_FALSE(server_line && bar_line) << "a server's line on the bar's line: " << line;
    warned = warned || (server_line && contains(line, "too long for the model's context"));
    bar = bar || bar_line;
  }
  EXPECT_TRUE(warned) << run.output;  // the line the test is about was printed mid-run
  EXPECT_TRUE(bar) << run.output;
}

// -q: the servers' start and stop lines go to <stem>_logs/<server>.log (named once); their
// warnings and the result are printed, the chatter is not.
TEST(EvalRunOutput, QuietPrintsWarningsAndTheResultAndLogsTheServers) {
  FakeEndpoint fake;
  fake.script(kContextRefusal);
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(3));
  const auto out = tmp.file("out.jsonl");
  auto r = gym::test::run_command(eval_command(fake.base(), input, out, "-q"));
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* chatter :
       {"listening on", "Head server at", "servers ready", "received signal", "servers stopped",
        "Clearing output fpath", "Sorting results", "Computing aggregate metrics", "Collecting"})
    EXPECT_FALSE(contains(r.output, chatter)) << chatter << " in:\n" << r.output;
  const auto logs = tmp.file("out_logs");
  EXPECT_TRUE(contains(r.output, "Server output: " + logs + "/<server>.log")) << r.output;
  EXPECT_TRUE(contains(r.output, "(policy_model) ")) << r.output;  // its warning
  EXPECT_TRUE(contains(r.output, "too long for the model's context")) << r.output;
  EXPECT_TRUE(contains(r.output, "Key metrics for example_single_tool_call_simple_agent"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "Rollouts: " + out)) << r.output;
  const auto model_log = read_text(logs + "/policy_model.log");
  EXPECT_TRUE(contains(model_log, "listening on")) << model_log;
  EXPECT_TRUE(contains(model_log, "received signal 15")) << model_log;
  EXPECT_TRUE(
      contains(read_text(logs + "/example_single_tool_call_simple_agent.log"), "listening on"));
}

// Without -q the servers' start lines show, but stopping them at the end is said in one line
// instead of three "received signal 15" lines that read like a crash.
TEST(EvalRunOutput, TheOrderlyShutdownDoesNotReadLikeAFailure) {
  FakeEndpoint fake;
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(2));
  auto r = gym::test::run_command(eval_command(fake.base(), input, tmp.file("out.jsonl")));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "(policy_model) ")) << r.output;
  EXPECT_TRUE(contains(r.output, "listening on")) << r.output;
  EXPECT_FALSE(contains(r.output, "received signal")) << r.output;
  EXPECT_TRUE(contains(r.output, "All 3 servers stopped")) << r.output;
}

// --json: stdout is one line, a JSON object with the exit code, the counts, the grouped failure
// causes, the key metrics and the files; the human output went to stderr.
TEST(EvalRunOutput, JsonSummaryIsTheOnlyLineOnStdout) {
  FakeEndpoint fake;
  fake.script(R"([{"content":"Sunny"},{"content":"Rainy"},)"
              R"({"status":400,"times":1000,"body":{"error":{"message":"bad request"}}}])");
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(6));
  const auto out = tmp.file("out.jsonl");
  const auto err = tmp.file("stderr.txt");
  auto r = run_split(eval_command(fake.base(), input, out, "--concurrency 1 --json"), err);
  const auto stderr_text = read_text(err);
  ASSERT_EQ(r.code, 3) << r.output << stderr_text;
  ASSERT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  const auto summary = last_json_line(r.output);
  EXPECT_EQ(summary.at("exit_code"), 3);
  const auto& n = summary.at("rollouts").as_object();
  EXPECT_EQ(n.at("total"), 6);
  EXPECT_EQ(n.at("dispatched"), 6);
  EXPECT_EQ(n.at("succeeded"), 2);
  EXPECT_EQ(n.at("failed"), 4);
  EXPECT_EQ(n.at("without_result"), 4);
  const auto& causes = summary.at("failure_causes").as_array();
  ASSERT_EQ(causes.size(), 1u) << json::serialize(summary);
  EXPECT_EQ(causes[0].at("rollouts"), 4);
  EXPECT_TRUE(contains(std::string(causes[0].at("cause").as_string()), "answered HTTP 400"));
  const auto& metrics = summary.at("key_metrics").as_object();
  ASSERT_TRUE(metrics.contains("example_single_tool_call_simple_agent"))
      << json::serialize(summary);
  EXPECT_TRUE(
      metrics.at("example_single_tool_call_simple_agent").as_object().contains("mean/reward"));
  const auto& files = summary.at("files").as_object();
  EXPECT_EQ(std::string(files.at("rollouts").as_string()), out);
  EXPECT_EQ(std::string(files.at("failures").as_string()), tmp.file("out_failures.jsonl"));
  EXPECT_EQ(std::string(files.at("aggregate_metrics").as_string()),
            tmp.file("out_aggregate_metrics.json"));
  EXPECT_TRUE(summary.at("stop_reason").is_null());
  EXPECT_TRUE(contains(std::string(summary.at("resume_command").as_string()), "--resume"));
  // What a person reads went to stderr.
  EXPECT_TRUE(contains(stderr_text, "Key metrics for")) << stderr_text;
  EXPECT_TRUE(contains(stderr_text, "servers ready")) << stderr_text;
  EXPECT_TRUE(contains(stderr_text, "(policy_model) ")) << stderr_text;
}

// --json when the endpoint stops the run, and when the command is wrong: still one JSON line,
// with the stop reason or the error.
TEST(EvalRunOutput, JsonSummaryNamesTheStopReasonAndErrors) {
  FakeEndpoint fake;
  fake.script(R"([{"status":400,"times":1000,"body":{"error":{"message":"bad key"}}}])");
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(6));
  const auto err = tmp.file("stderr.txt");
  auto r = run_split(eval_command(fake.base(), input, tmp.file("out.jsonl"),
                                  "--concurrency 1 --json ++model_endpoint_error_limit=3"),
                     err);
  ASSERT_EQ(r.code, 2) << r.output << read_text(err);
  ASSERT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  auto summary = last_json_line(r.output);
  EXPECT_EQ(summary.at("exit_code"), 2);
  EXPECT_TRUE(
      contains(std::string(summary.at("stop_reason").as_string()), "model_endpoint_error_limit"))
      << json::serialize(summary);
  EXPECT_EQ(summary.at("rollouts").at("failed"), 3);
  EXPECT_TRUE(summary.at("files").at("aggregate_metrics").is_null());

  auto bad = run_split(
      eval_command(fake.base(), tmp.file("missing.jsonl"), tmp.file("o.jsonl"), "--json"), err);
  EXPECT_EQ(bad.code, 1) << bad.output << read_text(err);
  ASSERT_EQ(std::count(bad.output.begin(), bad.output.end(), '\n'), 1) << bad.output;
  summary = last_json_line(bad.output);
  EXPECT_EQ(summary.at("exit_code"), 1);
  EXPECT_TRUE(contains(std::string(summary.at("error").as_string()), "missing.jsonl"))
      << json::serialize(summary);
  EXPECT_EQ(summary.at("rollouts").at("total"), 0);
}
