// The servers' output relay: orchestrator/output_pump.h, over real pipes.
#include "orchestrator/output_pump.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "orchestrator_test_support.h"

namespace gym::orchestrator {
namespace {

TEST(IsWarningOrError, TheLevelWordOfOurLinesAndOfPythonsLogging) {
  EXPECT_TRUE(is_warning_or_error("2025-01-01 12:00:00.000 warning env: slow"));
  EXPECT_TRUE(is_warning_or_error("WARNING:root:deprecated"));
  EXPECT_TRUE(is_warning_or_error("ERROR:    Exception in ASGI application"));
  EXPECT_TRUE(is_warning_or_error("2025-01-01 12:00:00.000 critical boom"));
  EXPECT_FALSE(is_warning_or_error("2025-01-01 12:00:00.000 info listening on http://x"));
  EXPECT_FALSE(is_warning_or_error("INFO:     Uvicorn running, no error here"));
  EXPECT_FALSE(is_warning_or_error("plain text mentioning an error later on in the line"));
}

TEST(OutputPump, EveryLineOfEveryPipeReachesItsLogAndTailTheLastOneToo) {
  testing::TempDir dir;
  int a[2], b[2];
  ASSERT_EQ(::pipe2(a, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(b, O_CLOEXEC), 0);
  ServerOutput first, second;
  first.name = "first";
  first.fd = a[0];
  first.log = std::make_unique<std::ofstream>(dir.file("first.log"));
  second.name = "second";
  second.fd = b[0];
  const std::string flood(3 * kMaxLineBytes, 'x');  // one line without end, from the second
  {
    OutputPump pump({&first, &second});
    ASSERT_EQ(::write(b[1], flood.data(), flood.size()), static_cast<ssize_t>(flood.size()));
    const std::string text = "one\ntwo\nno newline at the end";
    ASSERT_EQ(::write(a[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(a[1]);
    ::close(b[1]);
    pump.stop();
    EXPECT_EQ(pump.tail(first), (std::vector<std::string>{"one", "two", "no newline at the end"}));
  }
  EXPECT_EQ(first.fd, -1) << "the pump closes a pipe at its end";
  first.log->flush();
  EXPECT_EQ(testing::read_text(dir.file("first.log")), "one\ntwo\nno newline at the end\n");
  ASSERT_EQ(second.tail.lines().size(), 1u);
  EXPECT_CONTAINS(second.tail.lines()[0], "[line truncated: " + std::to_string(flood.size()));
}

}  // namespace
}  // namespace gym::orchestrator
