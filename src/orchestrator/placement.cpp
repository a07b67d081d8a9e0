#include "orchestrator/placement.h"

#include <boost/json.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace gym::orchestrator {
namespace json = boost::json;

CommandOutput run_command(const std::vector<std::string>& argv) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    throw std::runtime_error("cannot run " + argv.at(0) + ": " + std::strerror(rc));
  }
  CommandOutput result;
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    result.output.append(buf, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

namespace {

std::string command_text(const std::vector<std::string>& argv) {
  std::string text;
  for (const auto& a : argv) text += (text.empty() ? "" : " ") + a;
  return text;
}

CommandOutput checked(const CommandRunner& run, const std::vector<std::string>& argv) {
  auto r = run(argv);
  if (r.exit_code != 0)
    throw std::runtime_error("`" + command_text(argv) + "` failed (exit " +
                             std::to_string(r.exit_code) + "): " + r.output);
  return r;
}

// The value of `key=` in one line of `scontrol show ... -o`.
std::string field(const std::string& line, const std::string& key) {
  std::istringstream words(line);
  for (std::string word; words >> word;)
    if (word.starts_with(key + "=")) return word.substr(key.size() + 1);
  return "";
}

}  // namespace

Allocation allocation_nodes(const std::function<const char*(const char*)>& getenv,
                            const CommandRunner& run) {
  const char* job = getenv("SLURM_JOB_ID");
  const char* list = getenv("SLURM_JOB_NODELIST");
  if (!job || !*job || !list || !*list) {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    return {{Node{name, core::this_machine_address()}}, true};
  }
  std::vector<Node> nodes;
  std::istringstream names(checked(run, {"scontrol", "show", "hostnames", list}).output);
  for (std::string name; std::getline(names, name);) {
    if (name.empty()) continue;
    const auto line = checked(run, {"scontrol", "show", "node", "-o", name}).output;
    std::string address = field(line, "NodeAddr");
    nodes.push_back({name, address.empty() ? name : address});
  }
  if (nodes.empty())
    throw std::runtime_error("SLURM_JOB_NODELIST=" + std::string(list) + " names no node");
  // The driver's node first: placement starts there, and the head server listens there.
  const char* self = getenv("SLURMD_NODENAME");
  auto it =
      self ? std::find_if(nodes.begin(), nodes.end(), [&](const Node& n) { return n.name == self; })
           : nodes.end();
  if (it == nodes.end()) return {std::move(nodes), false};
  std::rotate(nodes.begin(), it, it + 1);
  return {std::move(nodes), true};
}

bool Placement::remote(const std::string& instance) const {
  auto it = node_of.find(instance);
  return it != node_of.end() && (it->second != 0 || !allocation.driver_on_first);
}

const Node& Placement::node(const std::string& instance) const {
  return allocation.nodes.at(node_of.at(instance));
}

namespace {

std::string pin_key(const core::ServerInstance& inst) {
  return inst.name + "." + inst.server_type + "." + inst.impl + ".slurm_node";
}

}  // namespace

std::vector<NodeChoice> choose_nodes(const std::vector<core::ServerInstance>& instances,
                                     std::size_t node_count, const NodesInMessages& nodes) {
  std::vector<NodeChoice> choices;
  std::size_t next = 0;
  for (const auto& inst : instances) {
    const auto* pin = inst.config.if_contains("slurm_node");
    if (!pin || pin->is_null()) {
      choices.push_back({next++ % node_count, ""});
    } else if (pin->is_int64() || pin->is_uint64()) {
      const auto index =
          pin->is_int64() ? pin->get_int64() : static_cast<std::int64_t>(pin->get_uint64());
      if (index < 0 || static_cast<std::uint64_t>(index) >= node_count)
        throw core::ConfigError("config error: " + pin_key(inst) + " = " + std::to_string(index) +
                                ": " + nodes.owner + " " + std::to_string(node_count) +
                                " node(s), indexes 0-" + std::to_string(node_count - 1) + " (" +
                                nodes.names + ")");
      choices.push_back({static_cast<std::size_t>(index), ""});
    } else if (pin->is_string()) {
      choices.push_back({std::nullopt, std::string(pin->get_string())});
    } else {
      throw core::ConfigError("config error: " + pin_key(inst) +
                              " must be a node name or a 0-based index");
    }
  }
  return choices;
}

Placement place_servers(const std::vector<core::ServerInstance>& instances,
                        const Allocation& allocation) {
  Placement p;
  p.allocation = allocation;
  std::vector<std::string> names;
  for (const auto& n : allocation.nodes) names.push_back(n.name);
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  const auto choices = choose_nodes(instances, names.size(), {"the allocation has", all});
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const auto& inst = instances[i];
    if (choices[i].index) {
      p.node_of[inst.name] = *choices[i].index;
      continue;
    }
    const std::string& name = choices[i].name;
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      std::string msg = "config error: " + pin_key(inst) + " = " + name +
                        " is no node of this allocation (" + all + ")";
      if (auto hint = core::did_you_mean(name, names)) msg += "; did you mean " + *hint + "?";
      throw core::ConfigError(msg);
    }
    p.node_of[inst.name] = static_cast<std::size_t>(it - names.begin());
  }
  return p;
}

void apply_placement_hosts(json::object& cfg, const std::vector<core::ServerInstance>& instances,
                           const Placement& placement) {
  for (const auto& inst : instances) {
    auto& block = cfg[inst.name].as_object()[inst.server_type].as_object()[inst.impl].as_object();
    if (auto* h = block.if_contains("host"); !h || h->is_null())
      block["host"] = placement.node(inst.name).address;
  }
}

std::vector<std::string> srun_command(const Node& node, const std::string& instance) {
  return {"srun",
          "--overlap",
          "--nodes=1",
          "--ntasks=1",
          "--nodelist=" + node.name,
          "--job-name=" + instance,
          "--kill-on-bad-exit=1",
          "--unbuffered"};
}

std::set<std::string> terminate_steps(const std::string& job_id,
                                      const std::set<std::string>& instances,
                                      const CommandRunner& run) {
  std::set<std::string> signalled;
  if (job_id.empty() || instances.empty()) return signalled;
  CommandOutput steps;
  try {
    steps = run({"squeue", "--steps", "--noheader", "--format=%i|%j", "--jobs=" + job_id});
  } catch (const std::exception&) {
    return signalled;
  }
  if (steps.exit_code != 0) return signalled;
  std::vector<std::string> argv{"scancel", "--signal=TERM"};
  std::istringstream lines(steps.output);
  for (std::string line; std::getline(lines, line);) {
    const auto bar = line.find('|');
    if (bar == std::string::npos) continue;
    std::string name = line.substr(bar + 1);
    while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
    if (!instances.count(name)) continue;
    argv.push_back(line.substr(0, bar));
    signalled.insert(name);
  }
  if (signalled.empty()) return signalled;
  // scancel 22.05 signals a step's tasks and still exits 1 ("Invalid job id specified" for the
  // job part of the id), so its exit code says nothing; a step it missed is stopped with its srun
  // after the grace period.
  try {
    run(argv);
  } catch (const std::exception&) {
    return {};
  }
  return signalled;
}

}  // namespace gym::orchestrator
