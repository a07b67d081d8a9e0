// `gym eval run --resume` over output files as they are in real use (issue 28 items 3 and 7):
// a rollouts file of hundreds of megabytes is resumed without holding it in memory, and an
// endpoint's error page that is not UTF-8 (a proxy's Latin-1 403) neither ends up in an output
// file as bytes Python's json refuses nor keeps --resume from reading a file an older gym wrote.
// gym, its servers and the fake endpoint (tests/support/fake_openai.cpp) run as processes; the
// output files are checked with Python's json, a real peer.
#include "files.h"
#include "live_deployment.h"
#include "process.h"
#include "temp_dir.h"
#include "text_search.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace json = boost::json;
using gym::test::FakeEndpoint;
using gym::test::read_jsonl;
using gym::test::read_text;
using gym::test::TempDir;
using gym::test::write_file;

namespace {

constexpr const char* kAgent = "example_single_tool_call_simple_agent";

using gym::test::contains;

void reset(const FakeEndpoint& fake) {
  auto raw = gym::test::http_raw(fake.port, gym::test::post("/reset", "{}"));
  ASSERT_EQ(gym::test::status_of(raw), 200) << raw;
}

// A result as the collector writes it for a rollout of the input row of `task` (weather_rows),
// most of it the response's `answer`, which the aggregate metrics do not read.
std::string result_row(int task, int rollout, const std::string& answer) {
  return R"({"responses_create_params":{"input":"Weather in city )" + std::to_string(task) +
         R"(?"},"response":{"id":"resp_)" + std::to_string(task) +
         R"(","object":"response","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":")" +
         answer +
         R"("}]}],"usage":{"input_tokens":52,"output_tokens":610,"total_tokens":662}},"reward":1.0,"_ng_task_index":)" +
         std::to_string(task) + R"(,"_ng_rollout_index":)" + std::to_string(rollout) +
         R"(,"agent_ref":{"name":")" + kAgent + "\"}}\n";
}

// Python's json over every line of `files`, read as UTF-8 (strict): "ok", or what it refused.
std::string python_reads(const std::vector<std::string>& files) {
  std::string command =
      "/usr/bin/python3 -c 'import json, sys\n"
      "for f in sys.argv[1:]:\n"
      "    for line in open(f, encoding=\"utf-8\"):\n"
      "        json.loads(line)\n"
      "print(\"ok\")'";
  for (const auto& f : files) command += " '" + f + "'";
  return gym::test::run_command(command + " 2>&1").output;
}

// The peak resident set size in kB of `command` and every process it started (the largest of
// them: gym, or one of its servers), with its exit code and output.
struct Measured {
  int code = 0;
  std::string output;
  long max_rss_kb = -1;
};
Measured run_measured(TempDir& tmp, const std::string& command) {
  const auto script = write_file(tmp, "measured.sh", command + "\n");
  auto r = gym::test::run_command(
      "/usr/bin/python3 -c 'import resource, subprocess, sys\n"
      "code = subprocess.call([\"/bin/sh\", sys.argv[1]], stderr=subprocess.STDOUT)\n"
      "print(\"MAX_RSS_KB\", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
      "sys.exit(code)' " +
      script + " 2>&1");
  Measured m{r.code, r.output};
  if (auto at = r.output.rfind("MAX_RSS_KB "); at != std::string::npos)
    m.max_rss_kb = std::stol(r.output.substr(at + 11));
  return m;
}

}  // namespace

// Item 3: resuming a rollouts file of 200 MB (the old resume held every line and its parsed
// row: a peak of several times the file) peaks at a fraction of the file's size, and the
// aggregate metrics over every row still come out.
TEST(ResumeAtScale, MemoryDoesNotGrowWithTheRolloutsFile) {
  FakeEndpoint fake;
  TempDir tmp;
  // As in real use, many repeats of fewer tasks (the aggregate metrics have a group per task).
  // Rows of 10 KB: what the file's size costs stands out from what each rollout costs (its key,
  // and its entry in the aggregate metrics' answer).
  constexpr int kTasks = 100, kRepeats = 200, kLeft = 3;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(kTasks));
  const auto out = tmp.file("out.jsonl");
  const std::string command = gym::test::live_eval_command(
      fake.base(), input, out,
      "--num-repeats " + std::to_string(kRepeats) +
          " --concurrency 2 ++model_endpoint_readiness_timeout_seconds=0");
  // A first run writes the materialized inputs and stops at once: the endpoint refuses.
  fake.script(R"([{"status":401,"times":1000,"body":{"error":{"message":"no"}}}])");
  auto first = gym::test::run_command(command + " ++model_endpoint_error_limit=1 2>&1");
  ASSERT_EQ(first.code, 2) << first.output;
  ASSERT_EQ(gym::test::read_lines(tmp.file("out_materialized_inputs.jsonl")).size(),
            static_cast<std::size_t>(kTasks * kRepeats));
  // Then every rollout but the last kLeft has a result, as a long run leaves them.
  {
    std::ofstream rollouts(out, std::ios::binary | std::ios::trunc);
    const std::string answer(10000, 'w');
    for (int task = 0; task < kTasks; ++task)
      for (int rollout = 0; rollout < kRepeats; ++rollout)
        if (task < kTasks - 1 || rollout < kRepeats - kLeft)
          rollouts << result_row(task, rollout, answer);
  }
  std::filesystem::remove(tmp.file("out_failures.jsonl"));
  const auto file_kb = static_cast<long>(std::filesystem::file_size(out) / 1024);
  ASSERT_GT(file_kb, 200L * 1000);
  reset(fake);

  auto resumed = run_measured(tmp, command + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "- " + std::to_string(kTasks * kRepeats - kLeft) +
                                           " rollouts already done (in main jsonl)"))
      << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "- 3 rollouts that still need to be run")) << resumed.output;
  EXPECT_FALSE(contains(resumed.output, "WARNING")) << resumed.output;
  EXPECT_EQ(gym::test::read_lines(out).size(), static_cast<std::size_t>(kTasks * kRepeats));
  // The aggregate metrics are over every row, the earlier ones read back from the file.
  const auto metrics = json::parse(read_text(tmp.file("out_aggregate_metrics.json")));
  ASSERT_EQ(metrics.as_array().size(), 1u) << metrics;
  EXPECT_TRUE(contains(json::serialize(metrics),
                       "\"agent_ref\":{\"name\":\"" + std::string(kAgent) + "\"}"))
      << metrics;
  ASSERT_GT(resumed.max_rss_kb, 0) << resumed.output;
  EXPECT_LT(resumed.max_rss_kb, file_kb / 2)
      << "peak RSS " << resumed.max_rss_kb << " kB resuming a file of " << file_kb << " kB";
}

// Item 7: a proxy answers 403 with a Latin-1 page. Every line of every output file is UTF-8 JSON
// that Python reads (the page's bytes that are not UTF-8 become U+FFFD), and --resume reads a
// failures file an older gym wrote with the raw bytes.
TEST(ResumeUtf8, ALatin1ErrorPageIsWrittenAsUtf8AndResumeReadsIt) {
  FakeEndpoint fake;
  TempDir tmp;
  const auto input = write_file(tmp, "in.jsonl", gym::test::weather_rows(2));
  const auto out = tmp.file("out.jsonl");
  const auto failures = tmp.file("out_failures.jsonl");
  const std::string command = gym::test::live_eval_command(
      fake.base(), input, out, "++model_endpoint_readiness_timeout_seconds=0");
  // "<html><body>Acc\xE8s refus\xE9 par le proxy</body></html>"
  fake.script(
      R"([{"status":403,"times":1000,"raw_body_hex":"3c68746d6c3e3c626f64793e416363e873207265667573e920706172206c652070726f78793c2f626f64793e3c2f68746d6c3e"}])");
  auto first = gym::test::run_command(command + " 2>&1");
  EXPECT_EQ(first.code, 3) << first.output;
  const auto failed = read_text(failures);
  ASSERT_EQ(read_jsonl(failures).size(), 2u) << failed;
  EXPECT_TRUE(contains(failed, "Acc\uFFFDs refus\uFFFD par le proxy")) << failed;
  EXPECT_EQ(python_reads({out, failures, tmp.file("out_materialized_inputs.jsonl")}), "ok\n");

  // An older gym wrote the page's bytes as they were: --resume reads the line anyway (it counts
  // as an attempt of its rollout) and runs both rollouts.
  {
    std::ofstream older(failures, std::ios::binary | std::ios::app);
    older << R"({"_ng_task_index":0,"_ng_rollout_index":0,"agent_ref":{"name":")" << kAgent
          << R"("},"_ng_failure_class":"agent_run_error","_ng_failure_response_body":"Acc)"
          << "\xE8s refus\xE9"
          << "\"}\n";
  }
  reset(fake);
  auto resumed = gym::test::run_command(command + " --resume 2>&1");
  EXPECT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "- 3 prior failed attempts (of 2 rollouts) in sidecar"))
      << resumed.output;
  EXPECT_EQ(read_jsonl(out).size(), 2u) << resumed.output;
  EXPECT_EQ(python_reads({out, tmp.file("out_materialized_inputs.jsonl")}), "ok\n");
}
