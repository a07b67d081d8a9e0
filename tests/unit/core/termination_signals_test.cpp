// SIGINT and SIGTERM taken synchronously: blocked, then taken as exit codes 130 and 143.
#include "core/termination_signals.h"

#include <gtest/gtest.h>

#include <signal.h>

using gym::core::TerminationSignals;
using namespace std::chrono_literals;

namespace {

bool blocked(int sig) {
  sigset_t now;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &now);
  return sigismember(&now, sig) == 1;
}

}  // namespace

TEST(TerminationSignals, ExitCodes) {
  EXPECT_EQ(gym::core::termination_exit_code(SIGINT), 130);
  EXPECT_EQ(gym::core::termination_exit_code(SIGTERM), 143);
  EXPECT_EQ(gym::core::termination_exit_code(SIGCHLD), 0);
  EXPECT_EQ(gym::core::termination_exit_code(-1), 0);  // sigtimedwait's timeout
}

TEST(TerminationSignals, BlocksTakesAndRestores) {
  const bool int_before = blocked(SIGINT), term_before = blocked(SIGTERM);
  {
    TerminationSignals signals;
    EXPECT_TRUE(blocked(SIGINT));
    EXPECT_TRUE(blocked(SIGTERM));
    EXPECT_FALSE(blocked(SIGCHLD));
    EXPECT_EQ(signals.take(0ms), 0);  // nothing pending: a poll
    ::raise(SIGTERM);                 // pending, not delivered
    EXPECT_EQ(signals.take(0ms), 143);
    ::raise(SIGINT);
    EXPECT_EQ(signals.take(1000ms), 130);
    EXPECT_EQ(signals.take(10ms), 0);  // each signal is taken once
    signals.restore();
  }
  EXPECT_EQ(blocked(SIGINT), int_before);
  EXPECT_EQ(blocked(SIGTERM), term_before);
}

TEST(TerminationSignals, ChildExitEndsTheWaitWithoutAnExitCode) {
  const bool chld_before = blocked(SIGCHLD);
  TerminationSignals signals(TerminationSignals::Children::wake);
  EXPECT_TRUE(blocked(SIGCHLD));
  ::raise(SIGCHLD);
  EXPECT_EQ(signals.take(10'000ms), 0);  // returns at once: the SIGCHLD was pending
  ::raise(SIGTERM);
  EXPECT_EQ(signals.take(0ms), 143);
  signals.restore();
  EXPECT_EQ(blocked(SIGCHLD), chld_before);
}

TEST(TerminationSignals, ACollectionsSupervisorTakesSigintAndSigtermOnly) {
  const gym::core::TerminationSignals signals;
  EXPECT_TRUE(blocked(SIGINT));
  EXPECT_TRUE(blocked(SIGTERM));
  ::raise(SIGINT);
  EXPECT_EQ(signals.take(0ms), 130);
  EXPECT_EQ(signals.take(0ms), 0);
  signals.restore();
}
