#include "core/termination_signals.h"

#include <pthread.h>
#include <unistd.h>

namespace gym::core {

namespace {

sigset_t signal_set(TerminationSignals::Children children) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kTerminationSignals) sigaddset(&set, s);
  if (children == TerminationSignals::Children::wake) sigaddset(&set, SIGCHLD);
  return set;
}

int take_from(const sigset_t& set, std::chrono::milliseconds wait) {
  timespec ts{static_cast<time_t>(wait.count() / 1000),
              static_cast<long>((wait.count() % 1000) * 1'000'000)};
  return termination_exit_code(::sigtimedwait(&set, nullptr, &ts));
}

}  // namespace

int termination_exit_code(int signal) {
  return signal == SIGINT ? 130 : signal == SIGTERM ? 143 : 0;
}

TerminationSignals::TerminationSignals(Children children) : set_(signal_set(children)) {
  ::pthread_sigmask(SIG_BLOCK, &set_, &previous_);
}

int TerminationSignals::take(std::chrono::milliseconds wait) const {
  int code = take_from(set_, wait);
  // The terminal echoed "^C" where the cursor was (often after a progress bar): what this
  // process prints next starts on a line of its own.
  if (code == termination_exit_code(SIGINT) && ::isatty(STDERR_FILENO) == 1)
    (void)!::write(STDERR_FILENO, "\n", 1);
  return code;
}

void TerminationSignals::restore() const { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

}  // namespace gym::core
