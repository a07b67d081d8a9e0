// The generated demo data against the servers that replay it (issue 4): `gym env start` with the
// three demo environments and replay_model loading <dir>/demo_rollouts.jsonl beside
// input_jsonl_fpath (docs/reference/replay-model.md); every input row posted kDemoRepeats times to
// its agent's /run. Each task's results must be exactly its recorded rows (reward, verifier fields,
// the whole Response), each replayed once, with no failure.
#include "demo_data/demo_data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdlib>
#include <fstream>
#include <map>

#include "core/json_text.h"
#include "process.h"
#include "python_compat/json_equal.h"
#include "reserved_port.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using gym::test::ChildProcess;
using gym::test::TempDir;

namespace {

std::vector<json::object> read_jsonl(const fs::path& path) {
  std::vector<json::object> rows;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(gym::core::parse_json(line).as_object());
  return rows;
}

// What a task's rollouts must reproduce: the recorded row without the collector's own keys
// (docs/design/wire-compatibility.md#collection-files), compared as JSON values; and, for readable
// failures, reward and verifier fields alone.
std::string result_key(json::object row, bool full) {
  for (const char* k : {"_ng_task_index", "_ng_rollout_index", "agent_ref"}) row.erase(k);
  if (!full)
    for (const char* k : {"responses_create_params", "response"}) row.erase(k);
  return gym::python_compat::canonical_json(row);
}

}  // namespace

TEST(DemoDataReplay, EveryRecordedTrajectoryReplaysToItsRecordedResult) {
  TempDir dir;
  const auto data = gym::demo_data::generate(dir.file("demo"));
  const gym::test::ReservedPort head_port_reserved;
  const int head_port = head_port_reserved.port();
  std::vector<std::string> argv{gym::test::build_path("src/cli/gym"), "env", "start"};
  for (const auto& env : data.environments) {
    argv.push_back("--resources-server");
    argv.push_back(env.resources_server);
  }
  for (std::string a : {"--model-type", "replay_model"}) argv.push_back(a);
  argv.push_back("++input_jsonl_fpath=" + data.input.string());
  argv.push_back("++head_server.port=" + std::to_string(head_port));
  ChildProcess gym_env(argv);
  ASSERT_FALSE(gym_env.wait_for_line("All ", std::chrono::seconds(60)).empty()) << gym_env.output();

  std::map<std::string, int> agent_port;
  auto listing = json::parse(gym::test::body_of(
      gym::test::http_raw(head_port, "GET /server_instances HTTP/1.1\r\nHost: x\r\n\r\n")));
  for (const auto& v : listing.as_array())
    agent_port[std::string(v.at("process_name").as_string())] = v.at("port").to_number<int>();

  const auto inputs = read_jsonl(data.input);
  const auto recorded = read_jsonl(data.rollouts);
  ASSERT_EQ(recorded.size(), inputs.size() * gym::demo_data::kDemoRepeats);
  std::map<std::int64_t, std::vector<std::string>> want, want_rewards, got, got_rewards;
  for (const auto& row : recorded) {
    auto task = row.at("_ng_task_index").as_int64();
    want[task].push_back(result_key(row, true));
    want_rewards[task].push_back(result_key(row, false));
  }

  int failures = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const int port = agent_port.at(std::string(inputs[i].at("agent_ref").at("name").as_string()));
    const std::string body = gym::core::render_json(inputs[i]);
    for (int r = 0; r < gym::demo_data::kDemoRepeats; ++r) {
      auto raw = gym::test::http_raw(port, gym::test::post("/run", body), std::chrono::seconds(60));
      if (gym::test::status_of(raw) != 200) {
        if (++failures <= 3) ADD_FAILURE() << "task " << i << ": " << raw.substr(0, 2000);
        continue;
      }
      const auto result = gym::core::parse_json(gym::test::body_of(raw)).as_object();
      got[static_cast<std::int64_t>(i)].push_back(result_key(result, true));
      got_rewards[static_cast<std::int64_t>(i)].push_back(result_key(result, false));
    }
  }
  EXPECT_EQ(failures, 0);

  int mismatched = 0;
  for (auto& [task, expected] : want) {
    auto& actual = got[task];
    std::sort(expected.begin(), expected.end());
    std::sort(actual.begin(), actual.end());
    if (expected == actual) continue;
    if (++mismatched > 3) continue;
    auto& er = want_rewards[task];
    auto& ar = got_rewards[task];
    std::sort(er.begin(), er.end());
    std::sort(ar.begin(), ar.end());
    std::string detail;
    for (const auto& s : er) detail += "\n  recorded " + s;
    for (const auto& s : ar) detail += "\n  replayed " + s;
    ADD_FAILURE() << "task " << task << (er == ar ? ": rewards agree, responses differ" : ":")
                  << detail << "\n  first recorded row: " << expected.front().substr(0, 3000)
                  << "\n  first replayed row: "
                  << (actual.empty() ? "" : actual.front().substr(0, 3000));
  }
  EXPECT_EQ(mismatched, 0) << "tasks whose replayed results differ from the recorded ones";

  gym_env.signal(SIGTERM);
  EXPECT_EQ(gym_env.wait_exit(), 143) << gym_env.output();
}
