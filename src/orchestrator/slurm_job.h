#pragma once
// A deployment as one Slurm batch job (`gym eval submit`, docs/guides/slurm.md): what the job
// script holds and how a job's state is read. The script runs `gym eval run` on the first node with
// use_absolute_ip, which places every server (placement.h, the same rule the script's comments
// show) and starts the remote ones with `srun --overlap`. Nothing here submits: cli/eval_submit
// writes the script, calls sbatch and waits.
#include "core/config.h"
#include "orchestrator/placement.h"

#include <boost/json/object.hpp>

#include <map>
#include <string>
#include <vector>

namespace gym::orchestrator {

// The `slurm:` block (flags --nodes, --partition, --account, --time, --job-name, --sbatch).
struct SlurmJobSettings {
  int nodes = 1;
  std::string partition, account, time_limit, job_name = "gym-eval";
  std::vector<std::string> sbatch_args;  // extra #SBATCH lines, e.g. "--exclusive"

  // ConfigError naming the key for a wrong type or value, or a value that would break its line.
  static SlurmJobSettings from_config(const boost::json::object& cfg);
};

// What the job runs and where its files go.
struct SlurmJob {
  SlurmJobSettings settings;
  std::string gym;                     // absolute path of the gym binary
  std::string working_dir;             // the submitter's: relative paths mean the same there
  std::string script_path;             // <output stem>.sbatch
  std::string log_pattern;             // <output stem>.slurm-%j.out (sbatch's --output)
  std::vector<std::string> run_args;   // `gym eval run` arguments (job_run_arguments)
  std::vector<std::string> placement;  // planned_placement, written as comments
  std::string resume_command;          // exported to the job as GYM_RESUME_COMMAND
};

// Where the job's `gym eval run` will start each server (choose_nodes over `nodes` nodes), one
// line per instance for the script's comments. ConfigError for an index pin beyond `nodes`.
std::vector<std::string> planned_placement(const std::vector<core::ServerInstance>& instances,
                                           int nodes);

// The `gym eval run` arguments of a `gym eval submit` command line (`args`: what follows
// `submit`): the Slurm-only flags (--nodes ... --dry-run, --wait) removed, secrets replaced by
// interpolations of environment variables so that none is written into the script
// (--model-api-key: GYM_SUBMIT_POLICY_API_KEY; a --model-url with a password or a secret query
// parameter: GYM_SUBMIT_POLICY_BASE_URL; an override of a secret key such as ++hf_token=..., or
// one whose value is such a URL: GYM_SUBMIT_SECRET_<n>), and ++use_absolute_ip=true appended.
// `secrets` receives each variable and its value.
std::vector<std::string> job_run_arguments(const std::vector<std::string>& args,
                                           std::map<std::string, std::string>* secrets = nullptr);

// The command that continues a job that stopped early: the same submission with --resume (without
// --wait and --dry-run), from the directory it was made in, secrets masked (the user gives them
// again).
std::string resume_submit_command(const std::vector<std::string>& submit_args,
                                  const std::string& working_dir);

// ConfigError when `value` (of `key`) holds a line break: one #SBATCH value stays on its line.
void check_script_line(const std::string& key, const std::string& value);

// The job script: #SBATCH lines, then `exec gym eval run ...`, every word shell-quoted
// (core::shell_quoted).
std::string job_script(const SlurmJob& job);

// A job as Slurm reports it.
struct JobState {
  std::string state;  // JobState, e.g. RUNNING, COMPLETED; "" when Slurm no longer knows it
  int exit_code = 0;  // ExitCode's first number
  std::string nodes;  // NodeList

  // Whether the job ended (in any way): not pending, running or about to run again.
  bool finished() const;
};

// The job's state from `scontrol show job` while Slurm keeps it (MinJobAge), else from sacct
// when accounting is on; an empty state when neither knows it. Throws when scontrol cannot run.
JobState job_state(const std::string& id, const CommandRunner& run);

}  // namespace gym::orchestrator
