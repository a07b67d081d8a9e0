#pragma once
// The gym command line (docs/reference/cli.md): every verb, its flags and where they land.
// Parsing gives a typed Invocation that says which verb runs with what; running it calls that
// verb. main() is these two steps, so what a command line means is unit-tested (tests/unit/cli).
#include "cli/commands.h"
#include "cli/eval_submit.h"

#include <optional>
#include <string>
#include <vector>

namespace gym::cli {

enum class Verb {
  none,  // no verb: the help is printed
  version,
  serve,  // hidden: a spawned server process
  env_start,
  env_status,
  env_init,
  config_show,
  eval_run,
  eval_submit,
  demo,
  telemetry_report,
  list,
};

struct Invocation {
  std::string program = "gym";  // what usage lines and messages call it
  Verb verb = Verb::none;
  // Set when parsing already ended the command: --help printed (0), a usage error said (1).
  std::optional<int> exit_code;
  bool json = false, verbose = false;
  // The config flags; `overrides` holds the verb's own flags (--concurrency, --nodes, ...) as
  // ++overrides of their config keys first, then the user's overrides in order.
  ConfigFlags config;
  bool no_serve = false;                  // eval run --no-serve
  SubmitOptions submit;                   // eval submit
  DemoOptions demo;                       // demo (its `config` is set when it runs)
  std::vector<std::string> report_files;  // telemetry report
  std::string init_name, init_into;       // env init
};

// Parses `args` (args[0]: the program as invoked). NeMo Gym's legacy program names
// (docs/design/wire-compatibility.md#command-line) stand for their verb: `ng_run ...` is
// `gym env start ...`, with a note on stderr. Usage errors and --help are printed here.
Invocation parse_command_line(std::vector<std::string> args);

// Runs the verb; the process exit code (docs/design/failures-and-retries.md#exit-codes). Throws
// what the verb throws (core::ConfigError for a config it refuses).
int run(const Invocation& invocation);

// parse_command_line, then run; a core::ConfigError becomes exit code 1 and any other exception
// exit code 2, each said on stderr.
int run_command_line(std::vector<std::string> args);

}  // namespace gym::cli
