#include "orchestrator/slurm_job.h"

#include "core/secrets.h"
#include "core/shell_word.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>

namespace gym::orchestrator {
namespace json = boost::json;

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

}  // namespace

void check_script_line(const std::string& key, const std::string& value) {
  if (value.find_first_of("\n\r") != std::string::npos)
    throw core::ConfigError("config error: " + key + " must not contain a line break");
}

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
  check_script_line("slurm.partition", s.partition);
  check_script_line("slurm.account", s.account);
  check_script_line("slurm.time", s.time_limit);
  check_script_line("slurm.job_name", s.job_name);
  for (const auto& a : s.sbatch_args) {
    check_script_line("slurm.sbatch_args", a);
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
  const auto choices =
      choose_nodes(instances, static_cast<std::size_t>(nodes), {"the job has", "--nodes"});
  std::size_t width = 0;
  for (const auto& inst : instances) width = std::max(width, inst.name.size());
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const auto& name = instances[i].name;
    const auto& choice = choices[i];
    std::string where = !choice.index        ? "node " + choice.name + " (slurm_node)"
                        : *choice.index == 0 ? "node 0 (this one)"
                                             : "node " + std::to_string(*choice.index);
    std::string line = name + std::string(width - name.size() + 2, ' ') + where;
    if (choice.index != 0u) line += ": srun --overlap --nodes=1 --ntasks=1 --nodelist=<that node>";
    lines.push_back(std::move(line));
  }
  return lines;
}

std::string resume_submit_command(const std::vector<std::string>& submit_args,
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

JobState job_state(const std::string& id, const CommandRunner& run) {
  JobState st;
  auto r = run({"scontrol", "show", "job", "-o", id});
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
    r = run({"sacct", "--jobs=" + id, "--noheader", "--allocations", "--parsable2",
             "--format=State,ExitCode,NodeList"});
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

bool JobState::finished() const {
  return !state.empty() && state != "PENDING" && state != "RUNNING" && state != "CONFIGURING" &&
         state != "COMPLETING" && state != "SUSPENDED" && state != "REQUEUED" &&
         state != "RESIZING";
}

}  // namespace gym::orchestrator
