#pragma once
// Starting server processes (docs/design/processes.md#spawning): the gym binary itself, executed
// directly, with the merged config in NEMO_GYM_CONFIG_DICT (or a private file when it is too large)
// and the instance name in NEMO_GYM_CONFIG_PATH; or an external server's own program. Each child
// gets its own process group and dies with the thread that spawned it (PR_SET_PDEATHSIG), so no
// server outlives its orchestrator.
#include <sys/types.h>

#include <string>
#include <vector>

namespace gym::orchestrator {

struct SpawnedServer {
  std::string instance;
  pid_t pid = -1;
  std::string config_file;  // NEMO_GYM_CONFIG_DICT_FILE, removed by the caller at shutdown
  int output_fd = -1;       // read end of the child's stdout+stderr when captured
};

// Path of the running gym binary (/proc/self/exe).
std::string self_executable();

// Starts `gym serve` for `instance` with `config_yaml`. `extra_env` entries are "K=V".
// With `capture_output` the child's stdout and stderr go to one pipe (SpawnedServer::output_fd);
// otherwise it inherits ours. A `launcher` (e.g. srun_command: the server runs on another node)
// is executed with `gym serve` as its arguments; a config too large for the environment is then
// written in `config_dir`, which that node must see too (default: /tmp).
SpawnedServer spawn_server(const std::string& instance, const std::string& config_yaml,
                           const std::vector<std::string>& extra_env = {},
                           bool capture_output = false,
                           const std::vector<std::string>& launcher = {},
                           const std::string& config_dir = "/tmp");

// How an external server is started, as upstream's ng_run starts it: in its folder,
// `<folder>/.venv/bin/python <entrypoint>` when that venv exists (with VIRTUAL_ENV and PATH as
// `source .venv/bin/activate` sets them), else `python3 <entrypoint>` from PATH; the folder first
// on PYTHONPATH; the config inline in NEMO_GYM_CONFIG_DICT (upstream's servers know no file
// variant).
struct ExternalCommand {
  std::string folder;
  std::vector<std::string> argv;  // interpreter, entrypoint
  std::vector<std::string> env;   // "K=V" set over the inherited environment
};
ExternalCommand external_command(const std::string& folder, const std::string& entrypoint);

// When an external server's last output shows it could not import a module (ModuleNotFoundError,
// ImportError), what to do about it: the interpreter that ran (its full path), and the two fixes,
// a .venv in its folder (the path gym-cpp would then run) or Debian's packages (from the
// folder's requirements.txt and the missing module). Empty otherwise. `path`: the PATH it ran
// with.
std::string missing_module_hint(const ExternalCommand& command,
                                const std::vector<std::string>& last_output,
                                const std::string& path);

// Starts an external server for `instance` (through `launcher` as spawn_server does; srun runs
// its task in the folder too). Throws std::runtime_error when the config is too large for one
// environment variable (Linux allows 128 KiB).
SpawnedServer spawn_external_server(const std::string& instance, const ExternalCommand& command,
                                    const std::string& config_yaml,
                                    const std::vector<std::string>& extra_env, bool capture_output,
                                    const std::vector<std::string>& launcher = {});

// Non-blocking: the exit code (or 128+signal) if `pid` has exited, else -1. When it was killed
// and `killed_by` is given, the signal number lands there (0 for a normal exit).
int poll_exit(pid_t pid, int* killed_by = nullptr);
// "with code 1" or "killed by signal 9 (SIGKILL)": how a child ended, for messages.
std::string exit_description(int exit_code, int killed_by);
// Sends SIGTERM, waits up to `grace_seconds`, then SIGKILLs the process group; returns the
// exit code (or 128+signal).
int stop_server(pid_t pid, double grace_seconds);

}  // namespace gym::orchestrator
