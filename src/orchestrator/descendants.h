#pragma once
// What the servers leave behind. A server's children stay in its process group unless they
// leave it (setsid, setpgid), and outlive it when it exits; the orchestrator becomes a child
// subreaper so that every process a server started, once its parent is gone (a double fork, a
// setsid daemon, the children of a server that exited), becomes a child of the orchestrator
// instead of init's, where it can be found and stopped. Processes this process forked itself
// are told apart by the caller (`ours`): everything else among its children was re-parented.
#include <sys/types.h>

#include <set>
#include <vector>

namespace gym::orchestrator {

// Makes this process the reaper of its orphaned descendants (PR_SET_CHILD_SUBREAPER); false
// where the kernel refuses (then orphans go to init as before).
bool become_subreaper();

// This process's children (from /proc) other than `ours`, with the zombies among them reaped
// (waitpid on each pid, never -1: the status of a child someone else waits for is not taken).
std::vector<pid_t> adopted_children(const std::set<pid_t>& ours);

// Stops the adopted children in two steps: terminate() sends SIGTERM to each one not signalled
// yet, kill() sends SIGKILL to all; both return how many are still running. Their own children,
// adopted in turn as they die, are found by the next call. `ours`: the children this process
// started itself that are not reaped yet.
class Orphans {
 public:
  std::size_t terminate(const std::set<pid_t>& ours);
  std::size_t kill(const std::set<pid_t>& ours);
  // Every process signalled so far.
  std::size_t signalled() const { return signalled_.size(); }
  // The ones still running at the last call.
  const std::vector<pid_t>& left() const { return left_; }

 private:
  std::set<pid_t> signalled_;
  std::vector<pid_t> left_;
};

}  // namespace gym::orchestrator
