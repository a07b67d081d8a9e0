#pragma once
// `gym eval submit` (issue 16): the deployment and collection of `gym eval run` as one Slurm
// batch job. The job script, written beside the output, runs `gym eval run` on the first node
// with use_absolute_ip, which starts every server on its node with `srun --overlap`
// (orchestrator/placement.h) and stops them at the end. What the script holds is composed by
// orchestrator/slurm_job.h; this command writes it, submits it and waits.
#include "core/config.h"

#include <string>
#include <vector>

namespace gym::cli {

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
