#include "orchestrator/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <thread>

extern char** environ;

namespace gym::orchestrator {

constexpr std::size_t kMaxInlineConfig = 96 * 1024;  // Linux caps one variable at 128 KiB

std::string self_executable() {
  char buf[4096];
  auto n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot find the gym binary: /proc/self/exe unreadable");
  return std::string(buf, static_cast<std::size_t>(n));
}

namespace {

// The environment a server inherits: ours without any config variable of our own.
std::vector<std::string> inherited_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    if (kv.starts_with("NEMO_GYM_CONFIG_DICT") || kv.starts_with("NEMO_GYM_CONFIG_PATH=")) continue;
    env.emplace_back(kv);
  }
  return env;
}

// Sets `kv` ("K=V") in `env`, replacing an entry of the same name.
void set_variable(std::vector<std::string>& env, const std::string& kv) {
  const auto name = kv.substr(0, kv.find('=') + 1);
  for (auto& e : env)
    if (e.starts_with(name)) {
      e = kv;
      return;
    }
  env.push_back(kv);
}

std::string variable(const std::vector<std::string>& env, const std::string& name) {
  for (const auto& e : env)
    if (e.starts_with(name + "=")) return e.substr(name.size() + 1);
  return "";
}

// Forks `argv` (looked up in PATH when it has no slash) in `cwd` (empty: ours) with exactly
// `env`. The child gets its own process group, dies with the spawning thread and restores the
// signal mask the orchestrator blocks.
SpawnedServer spawn_process(const std::string& instance, std::vector<std::string> argv,
                            std::vector<std::string> env, const std::string& cwd,
                            bool capture_output) {
  SpawnedServer s;
  s.instance = instance;
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  // A bare program name is looked up in the child's PATH here, before the fork: after it only
  // async-signal-safe calls are allowed.
  std::string program = argv.at(0);
  if (program.find('/') == std::string::npos) {
    const std::string path = variable(env, "PATH");
    std::string_view dirs = path;  // views `path`, which must outlive it
    std::string found;
    while (found.empty() && !dirs.empty()) {
      auto colon = std::min(dirs.find(':'), dirs.size());
      std::string candidate = std::string(dirs.substr(0, colon)) + "/" + program;
      if (::access(candidate.c_str(), X_OK) == 0) found = candidate;
      dirs.remove_prefix(std::min(colon + 1, dirs.size()));
    }
    if (found.empty())
      throw std::runtime_error("server " + instance + ": '" + program +
                               "' was not found in PATH (" + path + ")");
    program = found;
  }
  const std::string cannot_enter = "cannot enter " + cwd + "\n";
  const std::string cannot_run = "cannot run " + program + "\n";

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
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      (void)!::write(STDERR_FILENO, cannot_enter.data(), cannot_enter.size());
      ::_exit(127);
    }
    ::execve(program.c_str(), args.data(), envp.data());
    (void)!::write(STDERR_FILENO, cannot_run.data(), cannot_run.size());
    ::_exit(127);
  }
  s.pid = pid;
  if (capture_output) {
    ::close(out[1]);
    s.output_fd = out[0];
  }
  return s;
}

}  // namespace

SpawnedServer spawn_server(const std::string& instance, const std::string& config_yaml,
                           const std::vector<std::string>& extra_env, bool capture_output,
                           const std::vector<std::string>& launcher,
                           const std::string& config_dir) {
  std::vector<std::string> env = inherited_environment();
  std::string config_file;
  if (config_yaml.size() > kMaxInlineConfig) {
    std::string path_text = config_dir + "/gym-config-XXXXXX";
    char* path = path_text.data();
    int fd = ::mkstemp(path);  // mode 0600
    if (fd < 0)
      throw std::runtime_error(std::string("cannot write config file: ") + strerror(errno));
    if (::write(fd, config_yaml.data(), config_yaml.size()) !=
        static_cast<ssize_t>(config_yaml.size())) {
      ::close(fd);
      throw std::runtime_error("cannot write config file " + std::string(path));
    }
    ::close(fd);
    config_file = path;
    env.push_back("NEMO_GYM_CONFIG_DICT_FILE=" + config_file);
  } else {
    env.push_back("NEMO_GYM_CONFIG_DICT=" + config_yaml);
  }
  env.push_back("NEMO_GYM_CONFIG_PATH=" + instance);
  for (const auto& e : extra_env) env.push_back(e);
  std::vector<std::string> argv = launcher;
  argv.push_back(self_executable());
  argv.push_back("serve");
  auto s = spawn_process(instance, std::move(argv), std::move(env), "", capture_output);
  s.config_file = config_file;
  return s;
}

ExternalCommand external_command(const std::string& folder, const std::string& entrypoint) {
  ExternalCommand c;
  c.folder = folder;
  const std::string venv = folder + "/.venv";
  std::error_code ec;
  if (std::filesystem::exists(venv + "/bin/python", ec)) {
    c.argv = {venv + "/bin/python", entrypoint};
    c.env.push_back("VIRTUAL_ENV=" + venv);
    const char* path = std::getenv("PATH");
    c.env.push_back("PATH=" + venv + "/bin" + (path && *path ? ":" + std::string(path) : ""));
  } else {
    c.argv = {"python3", entrypoint};
  }
  const char* pythonpath = std::getenv("PYTHONPATH");
  c.env.push_back("PYTHONPATH=" + folder +
                  (pythonpath && *pythonpath ? ":" + std::string(pythonpath) : ""));
  return c;
}

namespace {

// Where `program` is found on `path`, as execvp finds it; `program` itself when not found.
std::string on_path(const std::string& program, const std::string& path) {
  if (program.find('/') != std::string::npos) return program;
  std::string_view rest = path;
  while (!rest.empty()) {
    const auto colon = std::min(rest.find(':'), rest.size());
    const std::string dir(rest.substr(0, colon));
    rest.remove_prefix(std::min(colon + 1, rest.size()));
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return program;
}

// Debian's name for a PyPI distribution or a top-level module: python3-<name>, lower case,
// with the few names Debian spells differently.
std::string debian_package(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) {
    return c == '_' || c == '.' ? '-' : static_cast<char>(std::tolower(c));
  });
  if (name == "pyyaml") name = "yaml";
  if (name.starts_with("python-")) name.erase(0, 7);
  return "python3-" + name;
}

// The distribution names of a requirements.txt, without versions, extras and markers.
std::vector<std::string> requirement_names(const std::string& file) {
  std::vector<std::string> names;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const auto end = line.find_first_of(" \t#<>=!~;[@\r");
    std::string name = line.substr(0, end);
    if (!name.empty() && name[0] != '-') names.push_back(name);
  }
  return names;
}

}  // namespace

std::string missing_module_hint(const ExternalCommand& command,
                                const std::vector<std::string>& last_output,
                                const std::string& path) {
  std::string missing;  // the module named in "No module named 'x'", or ""
  bool import_failed = false;
  for (const auto& line : last_output) {
    if (line.find("ModuleNotFoundError") == std::string::npos &&
        line.find("ImportError") == std::string::npos)
      continue;
    import_failed = true;
    constexpr std::string_view kNamed = "No module named '";
    if (auto at = line.find(kNamed); at != std::string::npos) {
      auto name = line.substr(at + kNamed.size());
      missing = name.substr(0, name.find_first_of("'."));
    }
  }
  if (!import_failed || command.argv.empty()) return "";
  const std::string venv = command.folder + "/.venv";
  const bool in_venv = command.argv[0] == venv + "/bin/python";
  const std::string interpreter = on_path(command.argv[0], path);
  std::string out = "hint: its Python could not import " +
                    (missing.empty() ? std::string("a module") : "'" + missing + "'") +
                    ". The interpreter was " + interpreter;
  std::error_code ec;
  const bool has_requirements = std::filesystem::exists(command.folder + "/requirements.txt", ec);
  const std::string install =
      has_requirements ? "-r " + command.folder + "/requirements.txt"
                       : (missing.empty() ? std::string("<the packages it imports>") : missing);
  if (in_venv) {
    out += " (the .venv of its folder). Install what it needs into that venv:\n  " + venv +
           "/bin/pip install " + install + "\n";
    return out;
  }
  out += " (the first python3 on PATH; a .venv in " + command.folder +
         " would be used instead). Either:\n  - make that venv once: python3 -m venv " + venv +
         " && " + venv + "/bin/pip install " + install + "\n    (gym-cpp then runs " + venv +
         "/bin/python)\n";
  std::vector<std::string> packages;
  auto add = [&](const std::string& name) {
    if (name.empty() || name == "nemo_gym" || name == "nemo-gym") return;
    auto p = debian_package(name);
    if (std::find(packages.begin(), packages.end(), p) == packages.end()) packages.push_back(p);
  };
  if (has_requirements)
    for (const auto& name : requirement_names(command.folder + "/requirements.txt")) add(name);
  add(missing);
  if (!packages.empty()) {
    std::string list;
    for (const auto& p : packages) list += " " + p;
    out += "  - or install Debian's packages for /usr/bin/python3: sudo apt install" + list + "\n";
    if (interpreter != "/usr/bin/python3")
      out += "    and run gym with /usr/bin first on PATH (PATH=/usr/bin:$PATH gym ...), since " +
             interpreter + " is another Python\n";
  }
  if (missing == "nemo_gym")
    out += "  nemo_gym is not a Debian package: install NeMo Gym into the venv\n";
  return out;
}

SpawnedServer spawn_external_server(const std::string& instance, const ExternalCommand& command,
                                    const std::string& config_yaml,
                                    const std::vector<std::string>& extra_env, bool capture_output,
                                    const std::vector<std::string>& launcher) {
  constexpr std::size_t kMaxVariable = 128 * 1024 - 1;  // MAX_ARG_STRLEN, with its NUL
  const std::string config = "NEMO_GYM_CONFIG_DICT=" + config_yaml;
  if (config.size() > kMaxVariable)
    throw std::runtime_error("the merged config (" + std::to_string(config_yaml.size()) +
                             " bytes) is too large for NEMO_GYM_CONFIG_DICT, which is how the "
                             "external server " +
                             instance + " receives it (at most 128 KiB)");
  std::vector<std::string> env = inherited_environment();
  set_variable(env, config);
  set_variable(env, "NEMO_GYM_CONFIG_PATH=" + instance);
  for (const auto& e : extra_env) set_variable(env, e);
  for (const auto& e : command.env) set_variable(env, e);
  std::vector<std::string> argv = launcher;
  argv.insert(argv.end(), command.argv.begin(), command.argv.end());
  return spawn_process(instance, std::move(argv), std::move(env), command.folder, capture_output);
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
