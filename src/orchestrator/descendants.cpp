#include "orchestrator/descendants.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace gym::orchestrator {

bool become_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }

namespace {

// Every child of this process: /proc/self/task/*/children (the children of each thread), else
// a walk over /proc for the parent pid when the kernel has no such file.
std::vector<pid_t> children_of_self() {
  namespace fs = std::filesystem;
  std::vector<pid_t> found;
  std::error_code ec;
  bool listed = false;
  for (const auto& task : fs::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(task.path() / "children");
    if (!in) continue;
    listed = true;
    for (pid_t pid; in >> pid;) found.push_back(pid);
  }
  if (listed) return found;
  const pid_t self = ::getpid();
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 4 > stat.size()) continue;
    if (std::atoi(stat.c_str() + close + 4) == self) found.push_back(std::atoi(name.c_str()));
  }
  return found;
}

}  // namespace

std::vector<pid_t> adopted_children(const std::set<pid_t>& ours) {
  std::vector<pid_t> running;
  for (pid_t pid : children_of_self()) {
    if (ours.count(pid)) continue;
    // Still our child, so the pid cannot have been reused: reaping it by pid is safe.
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) continue;
    running.push_back(pid);
  }
  return running;
}

std::size_t Orphans::terminate(const std::set<pid_t>& ours) {
  left_ = adopted_children(ours);
  for (pid_t pid : left_)
    if (signalled_.insert(pid).second) ::kill(pid, SIGTERM);
  return left_.size();
}

std::size_t Orphans::kill(const std::set<pid_t>& ours) {
  left_ = adopted_children(ours);
  for (pid_t pid : left_) {
    signalled_.insert(pid);
    ::kill(pid, SIGKILL);
  }
  return left_.size();
}

}  // namespace gym::orchestrator
