#pragma once
// SIGINT and SIGTERM for the processes that wait for them synchronously: the orchestrator (`gym env
// start`), the supervisor of forked server workers and the collection of `gym eval run`. A thread
// blocks the signals, so that no handler ever runs, and takes them with a timeout between its other
// duties (readiness probes, reaping children, watching a collection). A process interrupted this
// way exits with 130 (SIGINT) or 143 (SIGTERM) after an orderly shutdown
// (docs/design/failures-and-retries.md#exit-codes). An event loop waits for the same signals
// asynchronously (kTerminationSignals with an asio::signal_set).
#include <signal.h>

#include <array>
#include <chrono>

namespace gym::core {

inline constexpr std::array<int, 2> kTerminationSignals{SIGINT, SIGTERM};

// The exit code of a process stopped by `signal`: 130 for SIGINT, 143 for SIGTERM (128 + the
// signal number, as a shell reports them); 0 for any other signal.
int termination_exit_code(int signal);

// The termination signals blocked in the calling thread from construction on; threads it starts
// later inherit the mask (so the signals reach only the thread that takes them), and processes
// it spawns should restore theirs. Blocking is not undone by destruction: a signal still pending
// would then end the process by its default action. Not thread-safe; take() is for the thread
// that constructed it.
class TerminationSignals {
 public:
  // `children` = wake: SIGCHLD too, so the exit of a child process ends a wait early (for a
  // supervisor that then reaps it).
  enum class Children { ignore, wake };
  explicit TerminationSignals(Children children = Children::ignore);
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;

  // Waits up to `wait` (0: a poll) for SIGINT or SIGTERM and takes it. Returns its exit code
  // (130, 143), or 0 when none came: the time ran out, or a SIGCHLD ended the wait. After a
  // SIGINT, a newline goes to stderr when it is a terminal, so that what follows the echoed ^C
  // starts on its own line.
  int take(std::chrono::milliseconds wait) const;

  // Puts back the calling thread's mask from before construction: in a forked child before it
  // runs, or by a supervisor whose children are gone.
  void restore() const;

 private:
  sigset_t set_{};
  sigset_t previous_{};
};

}  // namespace gym::core
