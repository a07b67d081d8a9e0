#pragma once
// Where each server of a deployment runs (issue 16). By default every server runs on this
// machine and listens where its config says (default_host: 127.0.0.1). With `use_absolute_ip:
// true` servers listen on, and advertise, the address other machines reach this one at, as
// upstream's `gethostbyname(gethostname())`; inside a Slurm allocation of several nodes
// (`gym eval submit`, or `salloc`) the servers are also spread over the allocated nodes: round
// robin in config order starting on this (the driver's) node, or on the node an instance's
// `slurm_node` key names (a node name, or its 0-based index in the allocation). A server placed
// on another node is started there as a job step: `srun --overlap` (srun_command).
#include "core/config.h"

#include <boost/json/object.hpp>

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gym::orchestrator {

struct Node {
  std::string name;     // the Slurm node name (this machine's host name outside Slurm)
  std::string address;  // where the other nodes reach it
};

// The result of a program run to completion: its exit code (or 128+signal) and its stdout.
struct CommandOutput {
  int exit_code = -1;
  std::string output;
};
// Runs argv (looked up in PATH) with stdin from /dev/null; stderr joins stdout. Throws
// std::runtime_error when it cannot be started (e.g. not installed).
using CommandRunner = std::function<CommandOutput(const std::vector<std::string>& argv)>;
CommandOutput run_command(const std::vector<std::string>& argv);

// The nodes servers may run on.
struct Allocation {
  std::vector<Node> nodes;
  // Whether this process (the driver) runs on nodes[0]; false for a shell of `salloc` on a login
  // node, where every server then runs on an allocated node through srun.
  bool driver_on_first = true;
};

// Outside a Slurm allocation: this machine alone. Inside one (SLURM_JOB_ID and
// SLURM_JOB_NODELIST set): the allocation's nodes in Slurm's order, the one this process runs on
// (SLURMD_NODENAME) moved first, each with its NodeAddr from `scontrol show node`. `getenv` and
// `run` are the process's own unless a test gives others. Throws std::runtime_error when scontrol
// fails.
Allocation allocation_nodes(const std::function<const char*(const char*)>& getenv,
                            const CommandRunner& run);

struct Placement {
  Allocation allocation;
  std::map<std::string, std::size_t> node_of;  // instance name -> index into allocation.nodes

  // Whether `instance` runs on another node than the driver (so through srun).
  bool remote(const std::string& instance) const;
  const Node& node(const std::string& instance) const;
};

// Where an instance goes: an index into the nodes, or the node name its `slurm_node` pins it to,
// still to be found among them (known only inside the allocation).
struct NodeChoice {
  std::optional<std::size_t> index;
  std::string name;
};

// The one rule for where servers go, used by a running deployment (place_servers) and by the plan
// `gym eval submit` writes into its job script: round robin over `node_count` nodes in config order
// from node 0 (the driver's), `slurm_node` pinning an instance by node name or 0-based index.
// ConfigError for an index pin beyond the nodes or a pin of another type, which says what the
// nodes are with `nodes`.
struct NodesInMessages {
  std::string owner;  // "the allocation has" (N node(s) ...)
  std::string names;  // "n1, n2", or where the count comes from: "--nodes"
};
std::vector<NodeChoice> choose_nodes(const std::vector<core::ServerInstance>& instances,
                                     std::size_t node_count, const NodesInMessages& nodes);

// Places every instance on one of the allocation's nodes (choose_nodes). ConfigError when a
// `slurm_node` names no node of the allocation (with the nodes there are).
Placement place_servers(const std::vector<core::ServerInstance>& instances,
                        const Allocation& allocation);

// With use_absolute_ip: every instance without an explicit `host` listens on its node's address
// (the head server listens on default_host, which load_config made this machine's address).
void apply_placement_hosts(boost::json::object& cfg,
                           const std::vector<core::ServerInstance>& instances,
                           const Placement& placement);

// The launcher a server on another node is started through: one task on `node` that shares the
// job's resources with the other steps, named after the instance, its output unbuffered.
std::vector<std::string> srun_command(const Node& node, const std::string& instance);

// Asks Slurm to deliver SIGTERM to the servers started with srun_command in job `job_id` whose
// instance names are `instances` (their steps' names). srun itself, when signalled, kills its
// step ("forcing job termination"), so a server would lose its orderly shutdown (the final
// telemetry export); `scancel --signal=TERM <job>.<step>` lets it stop as a local one does.
// Returns the instances whose step was found and signalled (the others: stop their srun).
std::set<std::string> terminate_steps(const std::string& job_id,
                                      const std::set<std::string>& instances,
                                      const CommandRunner& run);

}  // namespace gym::orchestrator
