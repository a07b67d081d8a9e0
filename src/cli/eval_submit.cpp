#include "cli/eval_submit.h"

#include "cli/builtins.h"
#include "core/secrets.h"
#include "core/shell_word.h"
#include "core/termination_signals.h"
#include "orchestrator/placement.h"
#include "orchestrator/spawn.h"
#include "rollouts/options.h"
#include "rollouts/plan.h"

#include <boost/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace gym::cli {
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

constexpr char kApiKeyVariable[] = "GYM_SUBMIT_POLICY_API_KEY";
constexpr char kBaseUrlVariable[] = "GYM_SUBMIT_POLICY_BASE_URL";

// Flags of `gym eval submit` that `gym eval run` does not know, and whether each takes a value.
const std::map<std::string, bool>& slurm_only_flags() {
  static const std::map<std::string, bool> flags{
      {"--nodes", true},    {"--partition", true}, {"--account", true},  {"--time", true},
      {"--job-name", true}, {"--sbatch", true},    {"--dry-run", false}, {"--wait", false}};
  return flags;
}

std::string string_key(const json::object& block, const char* key) {
  const auto* v = block.if_contains(key);
  if (!v || v->is_null()) return "";
  if (v->is_string()) return std::string(v->get_string());
  if (v->is_int64()) return std::to_string(v->get_int64());
  throw core::ConfigError(std::string("config error: slurm.") + key + " must be a string");
}

// One #SBATCH value must stay on its line.
void check_line(const std::string& key, const std::string& value) {
  if (value.find_first_of("\n\r") != std::string::npos)
    throw core::ConfigError("config error: " + key + " must not contain a line break");
}

// The command that continues a job that stopped early: the same submission with --resume, from
// the directory it was made in, secrets masked (the user gives them again).
std::string resume_command(const std::vector<std::string>& submit_args,
                           const std::string& working_dir) {
  std::vector<std::string> words{"gym", "eval", "submit"};
  bool resume = false;
  for (const auto& a : submit_args) {
    if (a == "--wait" || a == "--dry-run") continue;
    resume = resume || a == "--resume";
    words.push_back(a);
  }
  if (!resume) words.push_back("--resume");
  return "cd " + core::shell_word(working_dir) + " && " + core::masked_command_line(words);
}

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

}  // namespace

SlurmJobSettings SlurmJobSettings::from_config(const json::object& cfg) {
  SlurmJobSettings s;
  const auto* v = cfg.if_contains("slurm");
  if (!v || v->is_null()) return s;
  if (!v->is_object()) throw core::ConfigError("config error: slurm must be a mapping");
  const auto& block = v->get_object();
  static const std::set<std::string> known{"nodes", "partition", "account",
                                           "time",  "job_name",  "sbatch_args"};
  for (const auto& kv : block)
    if (!known.count(std::string(kv.key()))) {
      std::string msg = "config error: unknown key slurm." + std::string(kv.key());
      if (auto hint = core::did_you_mean(kv.key(), {known.begin(), known.end()}))
        msg += "; did you mean slurm." + *hint + "?";
      throw core::ConfigError(msg + " (keys: nodes, partition, account, time, job_name, " +
                              "sbatch_args)");
    }
  s.nodes = static_cast<int>(core::get_int(block, "nodes", 1, 1, 100000));
  s.partition = string_key(block, "partition");
  s.account = string_key(block, "account");
  s.time_limit = string_key(block, "time");
  if (auto name = string_key(block, "job_name"); !name.empty()) s.job_name = name;
  if (const auto* extra = block.if_contains("sbatch_args"); extra && !extra->is_null()) {
    auto add = [&](const json::value& e) {
      if (!e.is_string())
        throw core::ConfigError("config error: slurm.sbatch_args must be a list of strings");
      s.sbatch_args.emplace_back(e.get_string());
    };
    if (extra->is_array()) {
      for (const auto& e : extra->get_array()) add(e);
    } else {
      add(*extra);
    }
  }
  check_line("slurm.partition", s.partition);
  check_line("slurm.account", s.account);
  check_line("slurm.time", s.time_limit);
  check_line("slurm.job_name", s.job_name);
  for (const auto& a : s.sbatch_args) {
    check_line("slurm.sbatch_args", a);
    if (!a.starts_with("-"))
      throw core::ConfigError("config error: slurm.sbatch_args: '" + a +
                              "' is no sbatch option (they start with -, e.g. --exclusive)");
  }
  return s;
}

std::vector<std::string> job_run_arguments(const std::vector<std::string>& args,
                                           std::map<std::string, std::string>* secrets) {
  std::vector<std::string> out;
  int n = 0;
  // `value` goes to the job through the environment variable `variable`: the job script (kept
  // beside the outputs, shown by squeue/scontrol) holds only its interpolation.
  auto through_environment = [&](const std::string& variable, const std::string& value) {
    if (secrets) (*secrets)[variable] = value;
    return "${oc.env:" + variable + "}";
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const std::string name = arg.substr(0, arg.find('='));
    const bool inline_value = arg.find('=') != std::string::npos;
    auto value_of_flag = [&] {
      return inline_value ? arg.substr(arg.find('=') + 1)
                          : (i + 1 < args.size() ? args[++i] : std::string());
    };
    if (auto it = slurm_only_flags().find(name); it != slurm_only_flags().end()) {
      if (it->second && !inline_value) ++i;  // its value
      continue;
    }
    if (name == "--model-api-key") {
      out.push_back("++policy_api_key=" + through_environment(kApiKeyVariable, value_of_flag()));
      continue;
    }
    if (name == "--model-url") {
      // A URL carrying a password or a secret query parameter (http://u:p@h/v1?api-key=...).
      const std::size_t first = i;
      std::string url = value_of_flag();
      if (core::masked_url(url) == url) {
        out.insert(out.end(), args.begin() + static_cast<std::ptrdiff_t>(first),
                   args.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      } else {
        out.push_back("--model-url=" + through_environment(kBaseUrlVariable, url));
      }
      continue;
    }
    if (auto secret = core::secret_override(arg)) {
      out.push_back(secret->first + through_environment("GYM_SUBMIT_SECRET_" + std::to_string(n++),
                                                        secret->second));
      continue;
    }
    if (const auto eq = arg.find('='); !arg.starts_with("-") && eq != std::string::npos) {
      // Any other override whose value is a URL with secrets (++policy_base_url=...).
      const std::string value = arg.substr(eq + 1);
      if (core::masked_url(value) != value) {
        out.push_back(arg.substr(0, eq + 1) +
                      through_environment("GYM_SUBMIT_SECRET_" + std::to_string(n++), value));
        continue;
      }
    }
    out.push_back(arg);
  }
  out.push_back("++use_absolute_ip=true");
  return out;
}

std::vector<std::string> planned_placement(const std::vector<core::ServerInstance>& instances,
                                           int nodes) {
  std::vector<std::string> lines;
  std::size_t width = 0;
  for (const auto& inst : instances) width = std::max(width, inst.name.size());
  std::size_t next = 0;
  for (const auto& inst : instances) {
    const auto* pin = inst.config.if_contains("slurm_node");
    std::string where;
    std::optional<std::int64_t> index;
    if (!pin || pin->is_null()) {
      index = static_cast<std::int64_t>(next++ % static_cast<std::size_t>(nodes));
    } else if (pin->is_int64()) {
      index = pin->get_int64();
      if (*index < 0 || *index >= nodes)
        throw core::ConfigError("config error: " + inst.name + "." + inst.server_type + "." +
                                inst.impl + ".slurm_node = " + std::to_string(*index) +
                                ": the job has " + std::to_string(nodes) + " node(s), indexes 0-" +
                                std::to_string(nodes - 1) + " (--nodes)");
    } else if (pin->is_string()) {
      where = "node " + std::string(pin->get_string()) + " (slurm_node)";
    }
    if (index) where = *index == 0 ? "node 0 (this one)" : "node " + std::to_string(*index);
    std::string line = inst.name + std::string(width - inst.name.size() + 2, ' ') + where;
    if (!index || *index != 0)
      line += ": srun --overlap --nodes=1 --ntasks=1 --nodelist=<that node>";
    lines.push_back(std::move(line));
  }
  return lines;
}

std::string job_script(const SlurmJob& job) {
  const auto& s = job.settings;
  std::ostringstream o;
  o << "#!/bin/bash\n";
  o << "#SBATCH --job-name=" << s.job_name << "\n";
  o << "#SBATCH --nodes=" << s.nodes << "\n";
  o << "#SBATCH --ntasks-per-node=1\n";
  o << "#SBATCH --output=" << job.log_pattern << "\n";
  o << "#SBATCH --chdir=" << job.working_dir << "\n";
  if (!s.partition.empty()) o << "#SBATCH --partition=" << s.partition << "\n";
  if (!s.account.empty()) o << "#SBATCH --account=" << s.account << "\n";
  if (!s.time_limit.empty()) o << "#SBATCH --time=" << s.time_limit << "\n";
  for (const auto& a : s.sbatch_args) o << "#SBATCH " << a << "\n";
  o << "# Written by `gym eval submit`; `sbatch " << job.script_path
    << "` submits it again.\n"
       "# The head server and the collection run here, on the first node. With use_absolute_ip\n"
       "# `gym eval run` starts the servers round robin over the allocated nodes, each on its\n"
       "# node with `srun --overlap`, and stops them at the end.\n";
  if (!job.placement.empty()) o << "# Servers, as placed when the job starts:\n";
  for (const auto& line : job.placement) o << "#   " << line << "\n";
  // What `gym eval run` tells to run when the collection stops early: submit again, not run here.
  if (!job.resume_command.empty())
    o << "export GYM_RESUME_COMMAND=" << core::shell_quoted(job.resume_command) << "\n";
  o << "exec " << core::shell_quoted(job.gym) << " eval run";
  for (const auto& a : job.run_args) o << " " << core::shell_quoted(a);
  o << "\n";
  return o.str();
}

namespace {

struct JobState {
  std::string state;  // JobState, e.g. RUNNING, COMPLETED; "" when Slurm no longer knows it
  int exit_code = 0;  // ExitCode's first number
  std::string nodes;  // NodeList
};

// The job's state from `scontrol show job` while Slurm keeps it (MinJobAge), else from sacct
// when accounting is on; an empty state when neither knows it. Throws when scontrol cannot run.
JobState job_state(const std::string& id) {
  JobState st;
  auto r = orchestrator::run_command({"scontrol", "show", "job", "-o", id});
  if (r.exit_code == 0) {
    std::istringstream words(r.output);
    for (std::string w; words >> w;) {
      if (w.starts_with("JobState=")) st.state = w.substr(9);
      if (w.starts_with("ExitCode=")) st.exit_code = std::atoi(w.substr(9).c_str());
      if (w.starts_with("NodeList=")) st.nodes = w.substr(9);
    }
    return st;
  }
  try {
    r = orchestrator::run_command({"sacct", "--jobs=" + id, "--noheader", "--allocations",
                                   "--parsable2", "--format=State,ExitCode,NodeList"});
  } catch (const std::exception&) {
    return st;
  }
  std::istringstream lines(r.output);
  std::string line;
  if (r.exit_code != 0 || !std::getline(lines, line)) return st;
  std::istringstream fields(line);
  std::string state, exit_code;
  std::getline(fields, state, '|');
  std::getline(fields, exit_code, '|');
  std::getline(fields, st.nodes, '|');
  st.state = state.substr(0, state.find(' '));  // "CANCELLED by 0"
  st.exit_code = std::atoi(exit_code.c_str());
  return st;
}

bool finished(const std::string& state) {
  return !state.empty() && state != "PENDING" && state != "RUNNING" && state != "CONFIGURING" &&
         state != "COMPLETING" && state != "SUSPENDED" && state != "REQUEUED" &&
         state != "RESIZING";
}

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
    JobState st;
    try {
      st = job_state(id);
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
    if (finished(st.state)) {
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
  const auto settings = SlurmJobSettings::from_config(cfg);
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

  SlurmJob job;
  job.settings = settings;
  job.gym = orchestrator::self_executable();
  job.working_dir = fs::current_path().string();
  job.script_path = paths.stem.string() + ".sbatch";
  job.log_pattern = paths.stem.string() + ".slurm-%j.out";
  std::map<std::string, std::string> secrets;  // handed to the job through sbatch's environment
  job.run_args = job_run_arguments(options.submit_args, &secrets);
  job.placement = planned_placement(core::find_server_instances(cfg), settings.nodes);
  job.resume_command = resume_command(options.submit_args, job.working_dir);
  for (const auto& path : {job.working_dir, job.log_pattern, job.script_path})
    check_line("the output path", path);
  const std::string script = job_script(job);
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
