// `gym eval submit` (issue 16) on a real Slurm cluster of network-namespace nodes
// (tests/support/slurm_cluster.h): the job script, the conformance environments with servers on
// two nodes, a cancelled job resumed, a server killed on the second node, the run id and node of
// every process's telemetry, `gym env status` against a running job. The tests that start a
// cluster need root (ctest label `root`; CI runs as root).
#include "conformance_dir.h"
#include "files.h"
#include "process.h"
#include "rollout_rows.h"
#include "slurm_cluster.h"
#include "temp_dir.h"
#include "text_search.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

namespace {

namespace json = boost::json;
using gym::test::read_jsonl;
using gym::test::read_lines;
using gym::test::read_text;
using gym::test::SlurmCluster;
using gym::test::TempDir;

std::string gym_binary() { return gym::test::build_path("src/cli/gym"); }

// `gym eval submit ARGS` run from `dir` (the job's working directory) against `cluster`.
gym::test::CommandResult submit(const SlurmCluster& cluster, const std::string& dir,
                                const std::string& args) {
  return cluster.run("cd " + dir + " && " + gym_binary() + " eval submit " + args);
}

using gym::test::contains;

// The job id `gym eval submit` printed.
std::string job_id_of(const std::string& output) {
  const std::string marker = "Submitted batch job ";
  auto at = output.find(marker);
  if (at == std::string::npos) return "";
  at += marker.size();
  return output.substr(at, output.find('\n', at) - at);
}

// Polls until `pred` holds or `limit` passes (a hang guard, not a timing assertion).
template <class Pred>
bool eventually(Pred pred, std::chrono::seconds limit = std::chrono::seconds(90)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return pred();
}

// The pids of `gym serve` processes (not the srun in front of them) of instance `instance` in job
// `job_id` of `cluster`, read from /proc: the cluster's processes are visible from the host. (Job
// ids start at 1 in every cluster, so the cluster's SLURM_CONF tells parallel tests apart.)
std::vector<pid_t> server_pids(const SlurmCluster& cluster, const std::string& job_id,
                               const std::string& instance) {
  std::vector<pid_t> pids;
  const std::string gym = std::filesystem::canonical(gym_binary()).string();
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec;
    if (std::filesystem::read_symlink(entry.path() / "exe", ec).string() != gym || ec) continue;
    const std::string environ = read_text(entry.path() / "environ");
    std::set<std::string> vars;
    for (std::size_t at = 0; at < environ.size();) {
      auto end = environ.find('\0', at);
      if (end == std::string::npos) end = environ.size();
      vars.insert(environ.substr(at, end - at));
      at = end + 1;
    }
    if (vars.count("NEMO_GYM_CONFIG_PATH=" + instance) && vars.count("SLURM_JOB_ID=" + job_id) &&
        vars.count(cluster.env().at(0)))
      pids.push_back(static_cast<pid_t>(std::stoi(name)));
  }
  return pids;
}

// ---- Without a cluster: the script and the checks before anything is queued ------------------

TEST(SlurmSubmit, DryRunPrintsTheJobScriptAndWritesNothing) {
  TempDir tmp;
  auto r = gym::test::run_command(
      "cd " + tmp.path() + " && " + gym_binary() +
      " eval submit --resources-server mcqa --model-type vllm_model --model-url "
      "http://127.0.0.1:9/v1 --model m --model-api-key sk-secret-123 --agent mcqa_simple_agent "
      "--split example -o out/rollouts.jsonl --nodes 3 --partition gpu --account proj --time "
      "01:30:00 --job-name mine --sbatch=--exclusive --sbatch '--comment=two words' "
      "++hf_token=hf-secret-456 --dry-run");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string& s = r.output;
  EXPECT_TRUE(s.starts_with("#!/bin/bash\n")) << s;
  for (const char* line :
       {"#SBATCH --job-name=mine\n", "#SBATCH --nodes=3\n", "#SBATCH --ntasks-per-node=1\n",
        "#SBATCH --partition=gpu\n", "#SBATCH --account=proj\n", "#SBATCH --time=01:30:00\n",
        "#SBATCH --exclusive\n", "#SBATCH --comment=two words\n"})
    EXPECT_TRUE(contains(s, line)) << line << " missing from\n" << s;
  EXPECT_TRUE(contains(s, "#SBATCH --output=" + tmp.path() + "/out/rollouts.slurm-%j.out\n")) << s;
  EXPECT_TRUE(contains(s, "#SBATCH --chdir=" + tmp.path() + "\n")) << s;
  // The job runs `gym eval run` with the same arguments, minus the Slurm flags.
  EXPECT_TRUE(contains(s, "exec '" + gym_binary() + "' eval run '--resources-server' 'mcqa'")) << s;
  EXPECT_TRUE(contains(s, "'++use_absolute_ip=true'")) << s;
  EXPECT_TRUE(contains(s, "export GYM_RESUME_COMMAND='cd " + tmp.path() +
                              " && gym eval submit --resources-server mcqa"))
      << s;
  // The placement the job will make, as comments: round robin over 3 nodes in config order.
  EXPECT_TRUE(contains(s, "#   mcqa               node 0 (this one)\n")) << s;
  EXPECT_TRUE(contains(s, "#   mcqa_simple_agent  node 1: srun --overlap")) << s;
  EXPECT_TRUE(contains(s, "#   policy_model       node 2: srun --overlap")) << s;
  for (const char* gone : {"--nodes", "--partition'", "--dry-run", "--sbatch"})
    EXPECT_FALSE(contains(s.substr(s.find("exec ")), gone)) << gone << " in\n" << s;
  // The API key never reaches the script: the job reads it from the environment.
  EXPECT_FALSE(contains(s, "sk-secret-123")) << s;
  EXPECT_TRUE(contains(s, "'++policy_api_key=${oc.env:GYM_SUBMIT_POLICY_API_KEY}'")) << s;
  EXPECT_FALSE(contains(s, "hf-secret-456")) << s;
  EXPECT_TRUE(contains(s, "'++hf_token=${oc.env:GYM_SUBMIT_SECRET_0}'")) << s;
  EXPECT_TRUE(contains(s, "--model-api-key ****")) << "the resume command, masked:\n" << s;
  EXPECT_FALSE(std::filesystem::exists(tmp.file("out"))) << "a dry run writes nothing";

  // A model URL with a credential is a secret too (issue 28 item 2): in the flag or an override.
  r = gym::test::run_command(
      "cd " + tmp.path() + " && " + gym_binary() +
      " eval submit --resources-server mcqa --model-type vllm_model --model-url "
      "'http://gym:pw-secret-789@127.0.0.1:9/v1' --model m --agent mcqa_simple_agent --split "
      "example -o out/rollouts.jsonl "
      "'++judge_base_url=http://127.0.0.1:9/v1?api-key=qk-secret-321' "
      "--dry-run");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "pw-secret-789")) << r.output;
  EXPECT_FALSE(contains(r.output, "qk-secret-321")) << r.output;
  EXPECT_TRUE(contains(r.output, "'--model-url=${oc.env:GYM_SUBMIT_POLICY_BASE_URL}'")) << r.output;
  EXPECT_TRUE(contains(r.output, "'++judge_base_url=${oc.env:GYM_SUBMIT_SECRET_0}'")) << r.output;

  // With an input file (checked before anything is queued), stdout is still the script alone.
  r = gym::test::run_command("cd " + tmp.path() + " && " + gym_binary() +
                             " eval submit --resources-server mcqa --model-type replay_model "
                             "--agent mcqa_simple_agent --input " +
                             std::string(GYM_SOURCE_ROOT) +
                             "/environments/mcqa/data/example.jsonl -o out/rollouts.jsonl "
                             "--dry-run 2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(r.output.starts_with("#!/bin/bash\n")) << r.output;
}

TEST(SlurmSubmit, ConfigErrorsStopBeforeAnythingIsQueued) {
  TempDir tmp;
  auto run = [&](const std::string& args) {
    return gym::test::run_command("cd " + tmp.path() + " && PATH=/nonexistent " + gym_binary() +
                                  " eval submit " + args + " -o out/r.jsonl");
  };
  auto r = run("--resources-server mcqaa --model-type replay_model --split example");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "mcqa")) << r.output;
  r = run("--resources-server mcqa --model-type replay_model --split example ++slurm.nodez=2");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "did you mean slurm.nodes?")) << r.output;
  r = run("--resources-server mcqa --model-type replay_model --input " + tmp.file("none.jsonl"));
  EXPECT_EQ(r.code, 1) << r.output;
  r =
      run("--resources-server mcqa --model-type replay_model --split example --nodes 2 "
          "++mcqa.resources_servers.mcqa.slurm_node=2");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "slurm_node = 2: the job has 2 node(s)")) << r.output;
  r = run("--resources-server mcqa --model-type replay_model --split example --nodes 0");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--nodes")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(tmp.file("out/r.sbatch")));
  // A valid config without Slurm on PATH: the script is written, the error says what is missing.
  r = run("--resources-server mcqa --model-type replay_model --split example");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "sbatch")) << r.output;
  EXPECT_TRUE(contains(r.output, tmp.file("out/r.sbatch"))) << r.output;
}

// --wait on a machine whose Slurm has sbatch but no scontrol (here: a fake sbatch that queues
// job 4242): the wait ends at once, saying what it needs and that the job goes on.
TEST(SlurmSubmit, WaitWithoutScontrolSaysWhatIsMissing) {
  TempDir tmp;
  const std::string sbatch = tmp.write("bin/sbatch", "#!/bin/sh\necho 4242\n");
  std::filesystem::permissions(sbatch, std::filesystem::perms::owner_all);
  auto r = gym::test::run_command("cd " + tmp.path() + " && PATH=" + tmp.file("bin") + " " +
                                  gym_binary() +
                                  " eval submit --resources-server mcqa --model-type replay_model "
                                  "--split example -o out/r.jsonl --wait");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "Submitted batch job 4242")) << r.output;
  EXPECT_TRUE(contains(r.output, "scontrol")) << r.output;
  EXPECT_TRUE(contains(r.output, "job 4242 goes on")) << r.output;
  EXPECT_TRUE(contains(r.output, tmp.file("out/r.slurm-4242.out"))) << r.output;
}

// ---- On a two-node cluster ------------------------------------------------------------------

// The six conformance environments: NeMo Gym's example rows, replayed from its recordings, with
// the servers spread over two nodes (round robin: policy_model and the agent on n1, the
// resources server on n2). Rewards by task as recorded (tests/integration/eval_run_test.cpp
// checks every other field of the same runs on one machine).
struct Conformance {
  std::string env;
  std::vector<double> rewards;
};

void PrintTo(const Conformance& c, std::ostream* os) { *os << c.env; }

class SlurmSubmitConformance : public ::testing::TestWithParam<Conformance> {};

TEST_P(SlurmSubmitConformance, RecordedRewardsWithServersOnBothNodes) {
  const auto& c = GetParam();
  const std::string input = gym::test::conformance_dir() + "/" + c.env + "/example.jsonl";
  ASSERT_TRUE(std::filesystem::exists(input)) << input << " (GYM_CONFORMANCE_DIR)";
  SlurmCluster cluster(2);
  TempDir tmp;
  auto r = submit(cluster, tmp.path(),
                  "--resources-server " + c.env + " --model-type replay_model --agent " + c.env +
                      "_simple_agent --input " + input +
                      " -o out/rollouts.jsonl --nodes 2 ++head_server.port=0 --wait");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string id = job_id_of(r.output);
  const std::string log = read_text(tmp.file("out/rollouts.slurm-" + id + ".out"));
  // Config order: the resources server comes first, so it runs on the driver's node.
  EXPECT_TRUE(contains(log, c.env + "_simple_agent ")) << log;
  EXPECT_TRUE(contains(log, "on node n2 (srun)")) << log;
  EXPECT_TRUE(contains(log, "listening on http://" + cluster.node_address(1) + ":")) << log;
  EXPECT_TRUE(contains(log, "listening on http://" + cluster.node_address(0) + ":")) << log;
  EXPECT_TRUE(contains(r.output, "job " + id + " ended: COMPLETED, exit code 0")) << r.output;

  auto rows = read_jsonl(tmp.file("out/rollouts.jsonl"));
  ASSERT_EQ(rows.size(), c.rewards.size()) << log;
  std::sort(rows.begin(), rows.end(), [](const json::object& a, const json::object& b) {
    return gym::test::key_of(a) < gym::test::key_of(b);
  });
  for (std::size_t t = 0; t < rows.size(); ++t) {
    EXPECT_EQ(gym::test::key_of(rows[t]).first, static_cast<std::int64_t>(t));
    EXPECT_EQ(rows[t].at("reward").to_number<double>(), c.rewards[t]) << c.env << " task " << t;
  }
  EXPECT_TRUE(read_lines(tmp.file("out/rollouts_failures.jsonl")).empty());
  EXPECT_FALSE(read_text(tmp.file("out/rollouts_aggregate_metrics.json")).empty());
  EXPECT_TRUE(std::filesystem::exists(tmp.file("out/rollouts.sbatch")));
}

INSTANTIATE_TEST_SUITE_P(
    Environments, SlurmSubmitConformance,
    ::testing::Values(Conformance{"example_single_tool_call", {1, 1, 1, 1, 1}},
                      Conformance{"example_session_state_mgmt", {1, 1, 1, 1, 1}},
                      Conformance{"example_multi_step", {1, 1, 1, 1, 1}},
                      Conformance{"mcqa", {1, 1, 0, 1, 1}}, Conformance{"xlam_fc", {1, 1, 0, 0, 1}},
                      Conformance{"string_match", {1, 1, 1, 1, 1}}),
    [](const auto& info) { return info.param.env; });

// One node: every server runs beside the driver, started as on one machine (no srun step), on
// the node's address; a server pinned to another node is a config error naming the nodes there
// are, before anything starts.
TEST(SlurmSubmit, OneNodeRunsEveryServerBesideTheDriver) {
  SlurmCluster cluster(1);
  TempDir tmp;
  auto r = submit(cluster, tmp.path(),
                  "--resources-server mcqa --model-type replay_model --split example "
                  "-o out/rollouts.jsonl ++head_server.port=0 --wait");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string id = job_id_of(r.output);
  const std::string log = read_text(tmp.file("out/rollouts.slurm-" + id + ".out"));
  EXPECT_FALSE(contains(log, "(srun)")) << log;
  EXPECT_TRUE(contains(log, "Head server at http://" + cluster.node_address(0) + ":")) << log;
  EXPECT_EQ(read_jsonl(tmp.file("out/rollouts.jsonl")).size(), 5u) << log;

  r = submit(cluster, tmp.path(),
             "--resources-server mcqa --model-type replay_model --split example "
             "-o out/pinned.jsonl ++head_server.port=0 --wait "
             "++mcqa.resources_servers.mcqa.slurm_node=n2");
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "mcqa.resources_servers.mcqa.slurm_node = n2 is no node of this "
                       "allocation (n1)"))
      << r.output;
}

// `salloc -N2 gym eval run ++use_absolute_ip=true` from outside the nodes (here the host, as a
// login node): every server runs on an allocated node through srun, the collection here.
TEST(SlurmAllocation, FromALoginNodeEveryServerRunsOnTheNodes) {
  SlurmCluster cluster(2);
  TempDir tmp;
  auto r = cluster.run("cd " + tmp.path() + " && salloc --nodes=2 " + gym_binary() +
                       " eval run --resources-server mcqa --model-type replay_model --split "
                       "example -o out/rollouts.jsonl ++head_server.port=0 "
                       "++use_absolute_ip=true");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "on node n1 (srun)")) << r.output;
  EXPECT_TRUE(contains(r.output, "on node n2 (srun)")) << r.output;
  EXPECT_TRUE(contains(r.output, "listening on http://" + cluster.node_address(1) + ":"))
      << r.output;
  EXPECT_EQ(read_jsonl(tmp.file("out/rollouts.jsonl")).size(), 5u) << r.output;
}

// A long collection over two nodes (the project's own mcqa example rows, replayed): 5 rows x
// kRepeats take minutes at concurrency 2, so a test stops it.
constexpr int kRepeats = 4000;
const std::string kLongRun =
    "--resources-server mcqa --model-type replay_model --split example -o out/rollouts.jsonl "
    "--nodes 2 --num-repeats " +
    std::to_string(kRepeats) +
    " --concurrency 2 "
    "++head_server.port=0";

// Submits kLongRun from `tmp` and waits until it has written `rows` rows; the job id, or "" after
// a failure has been reported.
std::string start_long_job(const SlurmCluster& cluster, const TempDir& tmp, std::size_t rows) {
  auto r = submit(cluster, tmp.path(), kLongRun);
  const std::string id = job_id_of(r.output);
  EXPECT_TRUE(r.code == 0 && !id.empty()) << r.output;
  if (id.empty()) return "";
  const bool running =
      eventually([&] { return gym::test::complete_lines(tmp.file("out/rollouts.jsonl")) >= rows; });
  EXPECT_TRUE(running) << read_text(tmp.file("out/rollouts.slurm-" + id + ".out"));
  return running ? id : "";
}

TEST(SlurmSubmit, ACancelledJobResumesWithEveryRowExactlyOnce) {
  SlurmCluster cluster(2);
  TempDir tmp;
  const std::string id = start_long_job(cluster, tmp, 200);
  ASSERT_FALSE(id.empty());
  const std::string rollouts = tmp.file("out/rollouts.jsonl");

  // While it runs, `gym env status` reaches the job's head server on the first node.
  const std::string log = read_text(tmp.file("out/rollouts.slurm-" + id + ".out"));
  const std::string marker = "Head server at http://" + cluster.node_address(0) + ":";
  ASSERT_TRUE(contains(log, marker)) << log;
  const auto at = log.find(marker) + marker.size();
  const std::string port = log.substr(at, log.find('\n', at) - at);
  auto status = gym::test::run_command(gym_binary() + " env status --json ++head_server.host=" +
                                       cluster.node_address(0) + " ++head_server.port=" + port);
  EXPECT_EQ(status.code, 0) << status.output;
  EXPECT_TRUE(contains(status.output, cluster.node_address(1))) << status.output;

  ASSERT_EQ(cluster.run("scancel " + id).code, 0);
  auto end = cluster.wait_job(id, std::chrono::seconds(90));
  EXPECT_EQ(end.state, "CANCELLED") << end.record;
  const auto written = gym::test::complete_lines(rollouts);
  EXPECT_LT(written, 5u * kRepeats) << "the job ended before it was cancelled";

  auto r = submit(cluster, tmp.path(), kLongRun + " --resume --wait");
  ASSERT_EQ(r.code, 0) << r.output;
  std::map<gym::test::RowKey, int> seen;
  for (const auto& row : read_jsonl(rollouts)) ++seen[gym::test::key_of(row)];
  EXPECT_EQ(seen.size(), 5u * kRepeats);
  for (const auto& [key, count] : seen)
    ASSERT_EQ(count, 1) << "task " << key.first << " rollout " << key.second;
}

// A job that reaches its time limit (`--time 1`: one minute) is stopped by Slurm as a cancelled
// one is: the rows written stay and the rest run on --resume, each exactly once. The model is the
// fake OpenAI endpoint on the host, slow on purpose (200 ms an answer), so the job is still
// running when its minute is up without keeping a core busy.
TEST(SlurmSubmit, ATimedOutJobResumesWithEveryRowExactlyOnce) {
  SlurmCluster cluster(2);
  gym::test::ChildProcess fake({gym::test::build_path("tests/support/gym_fake_openai"), "--host",
                                cluster.host_address(), "--delay-ms", "200", "--no-record"});
  const int port = fake.wait_port();
  ASSERT_GT(port, 0);
  TempDir tmp;
  constexpr int kRows = 5 * 300;  // 10 rows/s at concurrency 2: 150 s
  // The URL carries a password: the job gets it through its environment, never in the script.
  const std::string run =
      "--resources-server mcqa --model-type vllm_model --model-url "
      "http://gym:pw-secret-777@" +
      cluster.host_address() + ":" + std::to_string(port) +
      "/v1 --model fake-model --model-api-key none --agent mcqa_simple_agent "
      "--split example -o out/rollouts.jsonl --nodes 2 --num-repeats 300 "
      "++head_server.port=0";
  auto r = submit(cluster, tmp.path(), run + " --concurrency 2 --time 1");
  const std::string id = job_id_of(r.output);
  ASSERT_TRUE(r.code == 0 && !id.empty()) << r.output;
  auto end = cluster.wait_job(id, std::chrono::seconds(240));
  const std::string rollouts = tmp.file("out/rollouts.jsonl");
  EXPECT_EQ(end.state, "TIMEOUT") << end.record << "\n"
                                  << read_text(tmp.file("out/rollouts.slurm-" + id + ".out"));
  EXPECT_FALSE(contains(read_text(tmp.file("out/rollouts.sbatch")), "pw-secret-777"));
  const auto written = gym::test::complete_lines(rollouts);
  EXPECT_GT(written, 0u);
  EXPECT_LT(written, static_cast<std::size_t>(kRows));

  r = submit(cluster, tmp.path(), run + " --concurrency 64 --resume --wait");
  ASSERT_EQ(r.code, 0) << r.output;
  std::map<gym::test::RowKey, int> seen;
  for (const auto& row : read_jsonl(rollouts)) ++seen[gym::test::key_of(row)];
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kRows));
  for (const auto& [key, count] : seen)
    ASSERT_EQ(count, 1) << "task " << key.first << " rollout " << key.second;
}

TEST(SlurmSubmit, AServerKilledOnTheSecondNodeFailsTheJobNamingIt) {
  SlurmCluster cluster(2);
  TempDir tmp;
  const std::string id = start_long_job(cluster, tmp, 50);
  ASSERT_FALSE(id.empty());
  const std::string log_path = tmp.file("out/rollouts.slurm-" + id + ".out");
  // Round robin: mcqa (n1), mcqa_simple_agent (n2), policy_model (n1).
  auto pids = server_pids(cluster, id, "mcqa_simple_agent");
  ASSERT_EQ(pids.size(), 1u) << read_text(log_path);
  ASSERT_EQ(::kill(pids[0], SIGKILL), 0);
  auto end = cluster.wait_job(id, std::chrono::seconds(90));
  EXPECT_EQ(end.state, "FAILED") << end.record;
  EXPECT_EQ(end.exit_code, 2) << end.record;
  const std::string log = read_text(log_path);
  EXPECT_TRUE(contains(log, "server mcqa_simple_agent on node n2 (its srun step) exited")) << log;
  // The resume hint is the submission again (the job script exports it), not a local run.
  EXPECT_TRUE(
      contains(log, "the unfinished rollouts run with the same command and --resume:\n  cd " +
                        tmp.path() + " && gym eval submit "))
      << log;
  // Nothing of the job is left running.
  EXPECT_TRUE(eventually([&] {
    return server_pids(cluster, id, "mcqa").empty() &&
           server_pids(cluster, id, "policy_model").empty();
  }));
}

// Every process of the job reports the job id as its run id and its own node as host.name; the
// memory of the server on the second node is sampled there, by the server itself.
TEST(SlurmSubmit, TelemetryCarriesTheJobIdAndEachProcesssNode) {
  SlurmCluster cluster(2);
  TempDir tmp;
  const std::string console = tmp.file("telemetry.jsonl");
  auto r = submit(cluster, tmp.path(),
                  "--resources-server mcqa --model-type replay_model --split example "
                  "-o out/rollouts.jsonl --nodes 2 --wait ++head_server.port=0 "
                  "++telemetry.enabled=true ++telemetry.exporter=console "
                  "++telemetry.console_path=" +
                      console + " ++telemetry.memory_profiling.enabled=true");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string id = job_id_of(r.output);
  std::map<std::string, std::string> host_of_service;  // nemo.gym.server.name -> host.name
  std::set<std::string> run_ids;
  // gym.server.memory.usage points: (exporting server, sampled server name).
  std::set<std::pair<std::string, std::string>> memory_points;
  // Metric lines are OTLP/JSON export requests: resourceMetrics[].resource.
  for (const auto& line : read_lines(console)) {
    boost::system::error_code ec;
    auto v = json::parse(line, ec);
    if (ec || !v.is_object() || !v.as_object().contains("resourceMetrics")) continue;
    for (const auto& rm : v.at("resourceMetrics").as_array()) {
      std::map<std::string, std::string> attrs;
      for (const auto& a : rm.at("resource").at("attributes").as_array())
        if (const auto* text = a.at("value").as_object().if_contains("stringValue"))
          attrs[std::string(a.at("key").as_string())] = std::string(text->as_string());
      run_ids.insert(attrs["nemo.run.id"]);
      host_of_service[attrs["nemo.gym.server.name"]] = attrs["host.name"];
      for (const auto& scope : rm.at("scopeMetrics").as_array())
        for (const auto& metric : scope.at("metrics").as_array()) {
          if (metric.at("name") != "gym.server.memory.usage") continue;
          for (const auto& point : metric.at("gauge").at("dataPoints").as_array())
            for (const auto& a : point.at("attributes").as_array())
              if (a.at("key") == "nemo.gym.server.name")
                memory_points.insert({attrs["nemo.gym.server.name"],
                                      std::string(a.at("value").at("stringValue").as_string())});
        }
    }
  }
  ASSERT_FALSE(host_of_service.empty()) << r.output;
  EXPECT_EQ(run_ids, std::set<std::string>{id});
  EXPECT_EQ(host_of_service["mcqa_simple_agent"], "n2");
  EXPECT_EQ(host_of_service["mcqa"], "n1");
  EXPECT_EQ(host_of_service["orchestrator"], "n1");
  const std::set<std::pair<std::string, std::string>> want{
      {"orchestrator", "mcqa"},
      {"orchestrator", "policy_model"},
      {"mcqa_simple_agent", "mcqa_simple_agent"}};
  EXPECT_EQ(memory_points, want);
}

}  // namespace
