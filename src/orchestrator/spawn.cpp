#include "orchestrator/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace gym::orchestrator {

constexpr std::size_t kMaxInlineConfig = 96 * 1024;  // R2: Linux caps one variable at 128 KiB

std::string self_executable() {
  char buf[4096];
  auto n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot find the gym binary: /proc/self/exe unreadable");
  return std::string(buf, static_cast<std::size_t>(n));
}

SpawnedServer spawn_server(const std::string& instance, const std::string& config_yaml,
                           const std::vector<std::string>& extra_env, bool capture_output) {
  SpawnedServer s;
  s.instance = instance;
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    if (kv.starts_with("NEMO_GYM_CONFIG_DICT") || kv.starts_with("NEMO_GYM_CONFIG_PATH=")) continue;
    env.emplace_back(kv);
  }
  if (config_yaml.size() > kMaxInlineConfig) {
    char path[] = "/tmp/gym-config-XXXXXX";
    int fd = ::mkstemp(path);  // mode 0600
    if (fd < 0)
      throw std::runtime_error(std::string("cannot write config file: ") + strerror(errno));
    if (::write(fd, config_yaml.data(), config_yaml.size()) !=
        static_cast<ssize_t>(config_yaml.size())) {
      ::close(fd);
      throw std::runtime_error("cannot write config file " + std::string(path));
    }
    ::close(fd);
    s.config_file = path;
    env.push_back("NEMO_GYM_CONFIG_DICT_FILE=" + s.config_file);
  } else {
    env.push_back("NEMO_GYM_CONFIG_DICT=" + config_yaml);
  }
  env.push_back("NEMO_GYM_CONFIG_PATH=" + instance);
  for (const auto& e : extra_env) env.push_back(e);

  std::string exe = self_executable();
  std::vector<char*> argv{exe.data(), const_cast<char*>("serve"), nullptr};
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  int out[2] = {-1, -1};
  if (capture_output && ::pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe failed: ") + strerror(errno));
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + strerror(errno));
  if (pid == 0) {
    if (capture_output) {
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(out[1], STDERR_FILENO);
    }
    // The orchestrator blocks these to take them synchronously; servers need them delivered.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);  // the orchestrator died before we got here
    ::execve(exe.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  s.pid = pid;
  if (capture_output) {
    ::close(out[1]);
    s.output_fd = out[0];
  }
  return s;
}

int poll_exit(pid_t pid, int* killed_by) {
  int st = 0;
  if (::waitpid(pid, &st, WNOHANG) != pid) return -1;
  if (killed_by) *killed_by = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::string exit_description(int exit_code, int killed_by) {
  if (killed_by == 0) return "with code " + std::to_string(exit_code);
  std::string text = "killed by signal " + std::to_string(killed_by);
  if (const char* name = ::sigabbrev_np(killed_by)) text += std::string(" (SIG") + name + ")";
  return text;
}

int stop_server(pid_t pid, double grace_seconds) {
  ::kill(pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(grace_seconds));
  while (std::chrono::steady_clock::now() < deadline) {
    int rc = poll_exit(pid);
    if (rc >= 0) return rc;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid, SIGKILL);  // the whole group: workers and their children too
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace gym::orchestrator
