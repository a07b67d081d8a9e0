#pragma once
// `gym eval submit` (issue 16): the deployment and collection of `gym eval run` as one Slurm
// batch job. The job script, written beside the output, runs `gym eval run` on the first node
// with use_absolute_ip, which starts every server on its node with `srun --overlap`
// (orchestrator/placement.h) and stops them at the end.
#include "core/config.h"

#include <boost/json/object.hpp>

#include <map>
#include <string>
#include <vector>

namespace gym::cli {

// The `slurm:` block (flags --nodes, --partition, --account, --time, --job-name, --sbatch).
struct SlurmJobSettings {
  int nodes = 1;
  std::string partition, account, time_limit, job_name = "gym-eval";
  std::vector<std::string> sbatch_args;  // extra #SBATCH lines, e.g. "--exclusive"

  // ConfigError naming the key for a wrong type or value.
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

// Where the job's `gym eval run` will start each server (orchestrator/placement.h's rule: round
// robin over the nodes in config order from the first, `slurm_node` pins), one line per instance
// for the script's comments. ConfigError for an index pin beyond `nodes`.
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

// The job script: #SBATCH lines, then `exec gym eval run ...`, every word shell-quoted
// (core::shell_quoted).
std::string job_script(const SlurmJob& job);

struct SubmitOptions {
  std::vector<std::string> submit_args;  // the command line after `submit`
  bool dry_run = false;                  // print the script; write and submit nothing
  bool wait = false;                     // stream the job's output until it ends
};

// Validates the config as `gym eval run` would (exit 1 on a config error, before anything is
// queued), writes the script and submits it with `sbatch`. Returns 0 once queued (prints the job
// id); with `wait`, the job's exit code (2 when it was cancelled, timed out or failed in Slurm,
// 130 when the wait was interrupted: the job goes on).
int run_eval_submit(const core::ConfigSources& sources, const SubmitOptions& options);

}  // namespace gym::cli
