// The supervisor of forked server workers (docs/design/processes.md#workers): it restarts a worker
// that dies (at most 5 deaths within 60 s), and on SIGINT/SIGTERM stops accepting, passes SIGTERM
// on to the workers and SIGKILLs those still running after worker_stop_grace. No event loop here:
// signals and worker exits are taken synchronously.
#include "http/server.h"

#include "core/termination_signals.h"

#include <spdlog/spdlog.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <stdexcept>

namespace gym::http {

int HttpServer::supervise(const ServeHooks& hooks) {
  // Signals are taken synchronously here (a worker's exit ends the wait early); workers get the
  // previous mask back after fork.
  core::TerminationSignals signals(core::TerminationSignals::Children::wake);
  const pid_t root = ::getpid();

  auto spawn = [&](int worker) -> pid_t {
    pid_t pid = ::fork();
    if (pid == 0) {
      signals.restore();
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != root) ::_exit(1);
      int rc = serve(hooks, worker);
      std::fflush(nullptr);
      ::_exit(rc);
    }
    if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
    return pid;
  };

  auto close_listener = [&] {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = -1;
  };

  std::map<pid_t, int> workers;  // pid -> worker index
  for (int i = 0; i < options_.num_workers; ++i) workers[spawn(i)] = i;
  spdlog::info("started {} workers", options_.num_workers);

  std::deque<std::chrono::steady_clock::time_point> deaths;
  int exit_code = 0;
  bool stopping = false;
  auto stop_deadline = std::chrono::steady_clock::time_point::max();
  while (!workers.empty()) {
    if (signals.take(std::chrono::milliseconds(200)) != 0 && !stopping) {
      stopping = true;
      close_listener();  // stop accepting: only the workers' copies remain, closed on their stop
      stop_deadline = std::chrono::steady_clock::now() + options_.worker_stop_grace;
      for (auto& [pid, idx] : workers) ::kill(pid, SIGTERM);
    }
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      auto it = workers.find(pid);
      if (it == workers.end()) continue;
      int idx = it->second;
      workers.erase(it);
      if (stopping) continue;
      auto now = std::chrono::steady_clock::now();
      deaths.push_back(now);
      while (!deaths.empty() && now - deaths.front() > std::chrono::seconds(60)) deaths.pop_front();
      if (deaths.size() > 5) {
        spdlog::error("workers died more than 5 times within 60 s; stopping");
        exit_code = 1;
        stopping = true;
        close_listener();
        stop_deadline = now + options_.worker_stop_grace;
        for (auto& [p, i] : workers) ::kill(p, SIGTERM);
        continue;
      }
      pid_t fresh = spawn(idx);
      workers[fresh] = idx;
      spdlog::warn("worker {} (pid {}) exited with status {}; restarted as pid {}", idx, pid,
                   status, fresh);
    }
    if (stopping && std::chrono::steady_clock::now() > stop_deadline) {
      for (auto& [p, i] : workers) ::kill(p, SIGKILL);
      stop_deadline = std::chrono::steady_clock::time_point::max();
    }
  }
  signals.restore();
  return exit_code;
}

}  // namespace gym::http
