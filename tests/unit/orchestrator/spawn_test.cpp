// Child-process bookkeeping of the orchestrator (docs/design/processes.md#supervision and
// #shutdown-order): orchestrator/spawn.h's poll_exit, stop_server and self_executable, with real
// child processes. Every wait is for an event (a pipe closing, a process exiting), never for a
// time.
#include "orchestrator/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "orchestrator_test_support.h"

namespace gym::orchestrator {
namespace {

// Starts `args` (absolute program path first) in its own process group, with SIGTERM ignored
// when `ignore_term`; returns once the program runs (the exec closed the CLOEXEC pipe).
pid_t start_program(std::vector<std::string> args, bool ignore_term) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(ready[0]);
    ::setpgid(0, 0);
    if (ignore_term) ::signal(SIGTERM, SIG_IGN);  // stays ignored across exec
    ::execv(argv[0], argv.data());
    int err = errno;
    (void)!::write(ready[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(ready[1]);
  ::setpgid(pid, pid);  // either of the two calls wins; the other may fail harmlessly
  int err = 0;
  auto n = ::read(ready[0], &err, sizeof err);
  ::close(ready[0]);
  if (n != 0) throw std::runtime_error(std::string("exec failed: ") + std::strerror(err));
  return pid;
}

// A forked child that waits for one byte on a pipe and exits with it as its status.
struct WaitingChild {
  pid_t pid = -1;
  int release_fd = -1;

  WaitingChild() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      ::close(p[1]);
      unsigned char code = 99;
      (void)!::read(p[0], &code, 1);  // only async-signal-safe calls in the child
      ::_exit(code);
    }
    ::close(p[0]);
    release_fd = p[1];
  }
  ~WaitingChild() {
    if (release_fd >= 0) ::close(release_fd);
    // Kill only a child that is still ours and running: a reaped pid may belong to anyone.
    if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  void exit_with(unsigned char code) { (void)!::write(release_fd, &code, 1); }
};

// Blocks until `pid` has exited, without reaping it (poll_exit must still see it).
void wait_for_exit_unreaped(pid_t pid) {
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
}

// ---- poll_exit ----

TEST(PollExit, RunningChildHasNoExitCode) {
  WaitingChild child;
  EXPECT_EQ(poll_exit(child.pid), -1);
  EXPECT_EQ(poll_exit(child.pid), -1);
}

TEST(PollExit, ExitCodeOfAnExitedChild) {
  WaitingChild child;
  child.exit_with(7);
  wait_for_exit_unreaped(child.pid);
  EXPECT_EQ(poll_exit(child.pid), 7);
}

TEST(PollExit, ZeroExitCode) {
  WaitingChild child;
  child.exit_with(0);
  wait_for_exit_unreaped(child.pid);
  EXPECT_EQ(poll_exit(child.pid), 0);
}

TEST(PollExit, SignalIsReportedAs128PlusItsNumber) {
  WaitingChild child;
  ::kill(child.pid, SIGKILL);
  wait_for_exit_unreaped(child.pid);
  EXPECT_EQ(poll_exit(child.pid), 128 + SIGKILL);
}

// ---- stop_server ----

TEST(StopServer, ChildThatHonoursSigtermStopsWithIt) {
  pid_t pid = start_program({"/bin/sleep", "300"}, /*ignore_term=*/false);
  EXPECT_EQ(stop_server(pid, /*grace_seconds=*/300), 128 + SIGTERM);
  // Reaped: the pid is no child of ours any more.
  EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST(StopServer, ChildThatIgnoresSigtermIsKilledAfterTheGrace) {
  pid_t pid = start_program({"/bin/sleep", "300"}, /*ignore_term=*/true);
  EXPECT_EQ(stop_server(pid, /*grace_seconds=*/0.05), 128 + SIGKILL);
  EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST(StopServer, AlreadyExitedChildGivesItsExitCode) {
  pid_t pid = start_program({"/bin/sh", "-c", "exit 5"}, false);
  wait_for_exit_unreaped(pid);
  EXPECT_EQ(stop_server(pid, 300), 5);
}

// ---- self_executable ----

TEST(SelfExecutable, IsThisTestBinary) {
  auto exe = self_executable();
  EXPECT_EQ(std::filesystem::path(exe).filename(), "orchestrator_unit_tests");
  EXPECT_EQ(exe, std::filesystem::read_symlink("/proc/self/exe").string());
}

}  // namespace
}  // namespace gym::orchestrator
