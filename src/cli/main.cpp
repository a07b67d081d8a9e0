// gym: one binary for every verb; servers are this binary re-executed
// (docs/design/processes.md#one-binary). The command line is the cli library's
// (cli/command_line.h).
#include "cli/command_line.h"

#include <csignal>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  // A closed stdout (`gym env start | head`) must not kill the process before it removes its
  // temporary files and stops its servers: writes fail with EPIPE instead, which the
  // orchestrator notices.
  std::signal(SIGPIPE, SIG_IGN);
  return gym::cli::run_command_line(std::vector<std::string>(argv, argv + argc));
}
