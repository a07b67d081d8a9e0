// A deployment as one Slurm batch job: orchestrator/slurm_job.h. Nothing is submitted here;
// tests/integration/slurm_submit_test.cpp submits real jobs to a real (one-machine) cluster.
#include "orchestrator/slurm_job.h"

#include <boost/json.hpp>

#include <algorithm>
#include <map>

#include "orchestrator_test_support.h"

namespace gym::orchestrator {
namespace {

namespace json = boost::json;
using testing::config_error_of;

std::vector<core::ServerInstance> instances_of(const json::object& cfg) {
  return core::find_server_instances(cfg);
}

void add_instance(json::object& cfg, const std::string& name, const std::string& type,
                  json::object block = {}) {
  cfg[name] = json::object{{type, json::object{{"impl_" + name, std::move(block)}}}};
}

bool has(const std::vector<std::string>& words, const std::string& word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

TEST(SlurmJobSettings, TheSlurmBlockWithItsDefaultsAndItsErrors) {
  const auto defaults = SlurmJobSettings::from_config({});
  EXPECT_EQ(defaults.nodes, 1);
  EXPECT_EQ(defaults.job_name, "gym-eval");

  auto settings = SlurmJobSettings::from_config(json::parse(R"({"slurm": {"nodes": 3,
      "partition": "gpu", "time": "04:00:00", "sbatch_args": ["--exclusive"]}})")
                                                    .as_object());
  EXPECT_EQ(settings.nodes, 3);
  EXPECT_EQ(settings.partition, "gpu");
  EXPECT_EQ(settings.time_limit, "04:00:00");
  EXPECT_EQ(settings.sbatch_args, std::vector<std::string>{"--exclusive"});

  auto error = [](const char* slurm) {
    return config_error_of([&] {
      SlurmJobSettings::from_config(
          json::parse(std::string(R"({"slurm": )") + slurm + "}").as_object());
    });
  };
  EXPECT_CONTAINS(error(R"({"partiton": "gpu"})"), "did you mean slurm.partition?");
  EXPECT_CONTAINS(error(R"({"nodes": 0})"), "nodes");
  EXPECT_CONTAINS(error(R"({"account": "a\nb"})"), "slurm.account must not contain a line break");
  EXPECT_CONTAINS(error(R"({"sbatch_args": ["exclusive"]})"), "is no sbatch option");
  EXPECT_CONTAINS(error(R"({"partition": ["gpu"]})"), "slurm.partition must be a string");
}

TEST(JobRunArguments, SlurmFlagsGoSecretsMoveToTheEnvironmentAndServersSpread) {
  std::map<std::string, std::string> secrets;
  const auto args = job_run_arguments(
      {"--nodes", "2", "--partition=gpu", "--dry-run", "--wait", "--input", "in.jsonl",
       "--model-api-key", "sk-secret", "--model-url", "http://user:pw@vllm:8000/v1",
       "++hf_token=hf_abc", "++policy_base_url=http://h/v1?api-key=k1", "++limit=5"},
      &secrets);
  for (const auto* slurm_only : {"--nodes", "2", "--partition=gpu", "--dry-run", "--wait"})
    EXPECT_FALSE(has(args, slurm_only)) << slurm_only;
  EXPECT_TRUE(has(args, "--input") && has(args, "in.jsonl"));
  EXPECT_TRUE(has(args, "++limit=5"));
  EXPECT_TRUE(has(args, "++policy_api_key=${oc.env:GYM_SUBMIT_POLICY_API_KEY}"));
  EXPECT_TRUE(has(args, "--model-url=${oc.env:GYM_SUBMIT_POLICY_BASE_URL}"));
  EXPECT_EQ(args.back(), "++use_absolute_ip=true");
  // No secret is left in the words the script holds; each is in `secrets` instead.
  for (const auto& word : args)
    for (const auto* secret : {"sk-secret", "user:pw", "hf_abc", "k1"})
      EXPECT_EQ(word.find(secret), std::string::npos) << word;
  EXPECT_EQ(secrets.at("GYM_SUBMIT_POLICY_API_KEY"), "sk-secret");
  EXPECT_EQ(secrets.at("GYM_SUBMIT_POLICY_BASE_URL"), "http://user:pw@vllm:8000/v1");
  std::vector<std::string> others;
  for (const auto& [variable, value] : secrets)
    if (variable.starts_with("GYM_SUBMIT_SECRET_")) others.push_back(value);
  std::sort(others.begin(), others.end());
  EXPECT_EQ(others, (std::vector<std::string>{"hf_abc", "http://h/v1?api-key=k1"}));
  // A URL without a secret stays as it was given.
  EXPECT_TRUE(
      has(job_run_arguments({"--model-url", "http://vllm:8000/v1"}), "http://vllm:8000/v1"));
}

TEST(PlannedPlacement, TheScriptShowsWhatTheDeploymentWillDo) {
  json::object cfg;
  add_instance(cfg, "model", "responses_api_models");
  add_instance(cfg, "env", "resources_servers");
  add_instance(cfg, "agent", "responses_api_agents");
  add_instance(cfg, "pinned", "resources_servers", json::object{{"slurm_node", 1}});
  add_instance(cfg, "named", "resources_servers", json::object{{"slurm_node", "n7"}});
  const auto instances = instances_of(cfg);
  const auto lines = planned_placement(instances, 2);
  ASSERT_EQ(lines.size(), instances.size());
  // The same rule as a deployment inside a two-node allocation: node 0 is the driver's.
  const Allocation allocation{{{"n1", "a"}, {"n7", "b"}}, true};
  const auto placement = place_servers(instances, allocation);
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const auto& name = instances[i].name;
    const auto index = placement.node_of.at(name);
    const std::string expected = name == "named" ? "node n7 (slurm_node)"
                                 : index == 0    ? "node 0 (this one)"
                                                 : "node " + std::to_string(index);
    EXPECT_CONTAINS(lines[i], expected);
    EXPECT_EQ(lines[i].find("srun") != std::string::npos, placement.remote(name)) << lines[i];
  }
  EXPECT_CONTAINS(config_error_of([&] { planned_placement(instances, 1); }),
                  "pinned.resources_servers.impl_pinned.slurm_node = 1: the job has 1 node(s)");
}

TEST(JobScript, SbatchLinesThenTheRunEveryWordQuoted) {
  SlurmJob job;
  job.settings.nodes = 2;
  job.settings.partition = "gpu";
  job.settings.sbatch_args = {"--exclusive"};
  job.gym = "/opt/gym dir/gym";
  job.working_dir = "/home/u/run";
  job.script_path = "out.sbatch";
  job.log_pattern = "out.slurm-%j.out";
  job.run_args = {"--input", "my data.jsonl", "++x=$(rm -rf /)"};
  job.placement = {"model  node 0 (this one)"};
  job.resume_command = "cd /home/u/run && gym eval submit --resume";
  const auto script = job_script(job);
  EXPECT_TRUE(script.starts_with("#!/bin/bash\n"));
  for (const auto* line : {"#SBATCH --nodes=2\n", "#SBATCH --partition=gpu\n",
                           "#SBATCH --exclusive\n", "#SBATCH --output=out.slurm-%j.out\n",
                           "#SBATCH --chdir=/home/u/run\n", "#   model  node 0 (this one)\n"})
    EXPECT_CONTAINS(script, line);
  EXPECT_CONTAINS(script, "export GYM_RESUME_COMMAND='cd /home/u/run && gym eval submit --resume'");
  EXPECT_CONTAINS(script,
                  "exec '/opt/gym dir/gym' eval run '--input' 'my data.jsonl' '++x=$(rm -rf /)'\n");
}

TEST(ResumeSubmitCommand, TheSameSubmissionWithResumeAndNoSecret) {
  const auto command =
      resume_submit_command({"--wait", "--input", "a.jsonl", "--model-api-key", "sk-1"}, "/w d");
  EXPECT_CONTAINS(command, "cd '/w d' && gym eval submit --input a.jsonl --model-api-key ");
  EXPECT_TRUE(command.ends_with(" --resume")) << command;
  EXPECT_EQ(command.find("--wait"), std::string::npos);
  EXPECT_EQ(command.find("sk-1"), std::string::npos);
  // Already resuming: said once.
  const auto again = resume_submit_command({"--resume"}, "/w");
  EXPECT_EQ(again.find("--resume"), again.rfind("--resume"));
}

TEST(JobState, FromScontrolWhileSlurmKeepsTheJobThenFromSacct) {
  std::vector<std::string> ran;
  std::map<std::string, CommandOutput> answers;
  const CommandRunner run = [&](const std::vector<std::string>& argv) {
    ran.push_back(argv.at(0));
    auto it = answers.find(argv.at(0));
    return it == answers.end() ? CommandOutput{1, ""} : it->second;
  };
  answers["scontrol"] = {0,
                         "JobId=7 JobName=gym-eval JobState=RUNNING Reason=None "
                         "ExitCode=0:0 NodeList=n[1-2]\n"};
  auto st = job_state("7", run);
  EXPECT_EQ(st.state, "RUNNING");
  EXPECT_EQ(st.nodes, "n[1-2]");
  EXPECT_FALSE(st.finished());

  answers["scontrol"] = {1, "slurm_load_jobs error: Invalid job id specified\n"};
  answers["sacct"] = {0, "CANCELLED by 1000|0:15|n1\n"};
  st = job_state("7", run);
  EXPECT_EQ(st.state, "CANCELLED");
  EXPECT_EQ(st.exit_code, 0);
  EXPECT_TRUE(st.finished());
  EXPECT_EQ(ran.back(), "sacct");

  answers.erase("sacct");  // accounting off: nobody knows the job
  st = job_state("7", run);
  EXPECT_TRUE(st.state.empty());
  EXPECT_FALSE(st.finished());

  answers["scontrol"] = {0, "JobId=7 JobState=FAILED ExitCode=2:0 NodeList=n1\n"};
  st = job_state("7", run);
  EXPECT_EQ(st.exit_code, 2);
  EXPECT_TRUE(st.finished());
}

}  // namespace
}  // namespace gym::orchestrator
