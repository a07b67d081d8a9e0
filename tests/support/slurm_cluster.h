#pragma once
// Test support: a real, throw-away multi-node Slurm cluster on this machine, for the tests of
// `gym eval submit` (tests/support/slurm_cluster.sh does the work; see its header for the layout).
//
//   gym::test::SlurmCluster cluster(2);              // nodes n1, n2; about a second
//   auto id = cluster.run("sbatch --parsable job.sh").output;
//   auto end = cluster.wait_job(id, std::chrono::seconds(60));  // {"COMPLETED", 0, 0, ...}
//   // a child process talks to the cluster with cluster.env() (SLURM_CONF=...)
//
// Each node is a network namespace with its own address and host name on a private bridge;
// the file system, /tmp included, is shared, so a job reads and writes the test's files. Needs
// root and network namespaces (the tests carry the ctest label `root`). Several clusters may be
// up at once, in one process or in parallel tests. Should the test process die without the
// destructor, a watchdog tears the cluster down.
#include "process.h"

#include <chrono>
#include <string>
#include <vector>

namespace gym::test {

// How a job ended, as `scontrol show job -o` reports it.
struct SlurmJobEnd {
  std::string state;   // JobState (COMPLETED, FAILED, CANCELLED, TIMEOUT, ...); when the wait
                       // timed out, the last state seen (PENDING, RUNNING, ...)
  int exit_code = -1;  // ExitCode=N:S, N: the batch script's exit code
  int signal = 0;      // ExitCode=N:S, S: the signal that ended it, 0 if none
  std::string record;  // the last `scontrol show job -o` output, for failure messages
};

// Construct and destroy on one thread; in between, the const members may run on several at once.
class SlurmCluster {
 public:
  // Brings up a cluster of `nodes` nodes named n1..nN and waits until all are idle. Throws
  // std::runtime_error with the script's output when that fails, or when not run as root.
  explicit SlurmCluster(int nodes);
  ~SlurmCluster();  // kills every daemon, step and job task; removes the network and dir()
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  const std::string& dir() const { return dir_; }  // the cluster's directory (config, logs)
  const std::vector<std::string>& nodes() const { return nodes_; }  // "n1", "n2", ...
  // The IPv4 address of nodes()[i], as slurm.conf's NodeAddr (reachable from the host too).
  const std::string& node_address(std::size_t i) const { return addresses_.at(i); }
  // This machine's address on the cluster's bridge: where a job reaches a server the test runs
  // (bound to it or to 0.0.0.0). In a job, 127.0.0.1 is the node's own loopback.
  const std::string& host_address() const { return host_address_; }
  // The "K=V" entries a child process needs to use this cluster (SLURM_CONF=...).
  std::vector<std::string> env() const;
  // Runs a shell command on the host with env() set; its exit code and stdout+stderr.
  CommandResult run(const std::string& shell_command) const;
  // Polls `scontrol show job -o job_id` until the job has ended or `limit` passes.
  SlurmJobEnd wait_job(const std::string& job_id, std::chrono::seconds limit) const;

 private:
  void tear_down() noexcept;

  std::string owner_lock_;  // the flock'ed file the cluster's watchdog waits on
  int owner_fd_ = -1;
  std::string dir_;
  std::vector<std::string> nodes_;
  std::vector<std::string> addresses_;
  std::string host_address_;
};

}  // namespace gym::test
