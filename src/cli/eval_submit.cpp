#include "cli/eval_submit.h"

#include "cli/builtins.h"
#include "core/termination_signals.h"
#include "orchestrator/placement.h"
#include "orchestrator/slurm_job.h"
#include "orchestrator/spawn.h"
#include "rollouts/options.h"
#include "rollouts/plan.h"

#include <boost/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

namespace gym::cli {
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

// Sends stdout to /dev/null while it lives.
class StdoutSilenced {
 public:
  StdoutSilenced() {
    std::fflush(stdout);
    saved_ = ::dup(STDOUT_FILENO);
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
      ::dup2(null, STDOUT_FILENO);
      ::close(null);
    }
  }
  ~StdoutSilenced() {
    std::fflush(stdout);
    if (saved_ >= 0) {
      ::dup2(saved_, STDOUT_FILENO);
      ::close(saved_);
    }
  }
  StdoutSilenced(const StdoutSilenced&) = delete;
  StdoutSilenced& operator=(const StdoutSilenced&) = delete;

 private:
  int saved_ = -1;
};

// Prints what was appended to `path` since `offset`.
void stream_new_output(const std::string& path, std::uintmax_t& offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  in.seekg(static_cast<std::streamoff>(offset));
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    std::fwrite(buf, 1, static_cast<std::size_t>(in.gcount()), stdout);
    offset += static_cast<std::uintmax_t>(in.gcount());
  }
  std::fflush(stdout);
}

int wait_for_job(const std::string& id, const std::string& log, const std::string& resume) {
  const core::TerminationSignals signals;
  std::uintmax_t offset = 0;
  std::string last_state;
  // A job Slurm stops knowing (purged, or accounting off) cannot be waited for: give up after
  // this long and say where its output is.
  constexpr auto kUnknownLimit = std::chrono::seconds(60);
  auto known_at = std::chrono::steady_clock::now();
  for (;;) {
    orchestrator::JobState st;
    try {
      st = orchestrator::job_state(id, orchestrator::run_command);
    } catch (const std::exception& e) {
      std::fprintf(stderr,
                   "error: %s: --wait reads the job's state with Slurm's scontrol; job %s goes "
                   "on (its output: %s)\n",
                   e.what(), id.c_str(), log.c_str());
      return 2;
    }
    stream_new_output(log, offset);
    if (!st.state.empty()) known_at = std::chrono::steady_clock::now();
    if (st.state.empty() && std::chrono::steady_clock::now() - known_at > kUnknownLimit) {
      std::fprintf(stderr,
                   "error: Slurm no longer knows job %s (scontrol show job, sacct): cannot tell "
                   "how it ended; its output: %s\n",
                   id.c_str(), log.c_str());
      return 2;
    }
    if (st.state != last_state && (st.state == "PENDING" || st.state.empty())) {
      std::fprintf(stderr, "job %s: %s\n", id.c_str(),
                   st.state.empty() ? "not known to Slurm (yet)" : st.state.c_str());
    }
    last_state = st.state;
    if (st.finished()) {
      stream_new_output(log, offset);
      std::fprintf(stderr, "job %s ended: %s, exit code %d (nodes %s; output %s)\n", id.c_str(),
                   st.state.c_str(), st.exit_code, st.nodes.c_str(), log.c_str());
      if (st.state == "COMPLETED" || (st.state == "FAILED" && st.exit_code != 0)) {
        if (st.exit_code == 2 || st.exit_code >= 128)
          std::fprintf(stderr, "rows written so far stay; continue with: %s\n", resume.c_str());
        return st.exit_code;
      }
      std::fprintf(stderr, "rows written so far stay; continue with: %s\n", resume.c_str());
      return 2;
    }
    if (int code = signals.take(std::chrono::milliseconds(1000))) {
      std::fprintf(stderr,
                   "stopped waiting; job %s goes on (squeue -j %s; its output: %s; cancel it with "
                   "scancel %s)\n",
                   id.c_str(), id.c_str(), log.c_str(), id.c_str());
      return code;
    }
  }
}

}  // namespace

int run_eval_submit(const core::ConfigSources& sources, const SubmitOptions& options) {
  // Everything `gym eval run` would refuse is refused here, before the job waits in a queue.
  json::object cfg = core::load_config(sources);
  const auto settings = orchestrator::SlurmJobSettings::from_config(cfg);
  auto collection = rollouts::CollectionOptions::from_config(cfg, false);
  core::validate_server_instances(cfg, builtin_registry().catalog(), sources.search_roots);
  const auto paths = rollouts::OutputPaths::for_output(fs::absolute(collection.output));
  if (collection.input) {
    std::vector<std::string> agents;
    for (const auto& inst : core::find_server_instances(cfg))
      if (inst.server_type == "responses_api_agents") agents.push_back(inst.name);
    // Reads only; what it says is said again by the job (and stdout holds only the script of
    // --dry-run).
    const StdoutSilenced quiet;
    (void)rollouts::plan_rows(collection, paths, *collection.input, agents);
  }

  orchestrator::SlurmJob job;
  job.settings = settings;
  job.gym = orchestrator::self_executable();
  job.working_dir = fs::current_path().string();
  job.script_path = paths.stem.string() + ".sbatch";
  job.log_pattern = paths.stem.string() + ".slurm-%j.out";
  std::map<std::string, std::string> secrets;  // handed to the job through sbatch's environment
  job.run_args = orchestrator::job_run_arguments(options.submit_args, &secrets);
  job.placement = orchestrator::planned_placement(core::find_server_instances(cfg), settings.nodes);
  job.resume_command = orchestrator::resume_submit_command(options.submit_args, job.working_dir);
  for (const auto& path : {job.working_dir, job.log_pattern, job.script_path})
    orchestrator::check_script_line("the output path", path);
  const std::string script = orchestrator::job_script(job);
  if (options.dry_run) {
    std::fputs(script.c_str(), stdout);
    return 0;
  }

  std::error_code ec;
  fs::create_directories(fs::path(job.script_path).parent_path(), ec);
  {
    std::ofstream out(job.script_path, std::ios::trunc);
    out << script;
    if (!out.flush()) throw std::runtime_error("cannot write the job script " + job.script_path);
  }
  fs::permissions(job.script_path, fs::perms::owner_all, fs::perm_options::replace, ec);
  for (const auto& [variable, value] : secrets) ::setenv(variable.c_str(), value.c_str(), 1);
  orchestrator::CommandOutput r;
  try {
    r = orchestrator::run_command({"sbatch", "--parsable", job.script_path});
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "error: %s\ngym eval submit needs Slurm's sbatch on PATH (Debian: slurm-client); "
                 "the job script is %s\n",
                 e.what(), job.script_path.c_str());
    return 2;
  }
  std::string id = r.output.substr(0, r.output.find_first_of(";\n"));
  if (r.exit_code != 0 || id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
    std::fprintf(stderr, "error: sbatch %s failed (exit %d): %s", job.script_path.c_str(),
                 r.exit_code, r.output.c_str());
    return 2;
  }
  std::string log = job.log_pattern;
  log.replace(log.find("%j"), 2, id);
  std::printf("Submitted batch job %s\n  script: %s\n  output: %s\n", id.c_str(),
              job.script_path.c_str(), log.c_str());
  if (!options.wait) {
    std::printf("  follow: tail -f %s   status: squeue -j %s   cancel: scancel %s\n", log.c_str(),
                id.c_str(), id.c_str());
    return 0;
  }
  std::fflush(stdout);
  return wait_for_job(id, log, job.resume_command);
}

}  // namespace gym::cli
