// The per-percent summaries of a collection on stdout
// (docs/guides/evaluation.md#output-while-running): rollouts/progress.h.
// Only the parts that do not depend on the clock are compared.
#include "rollouts/progress.h"

#include <boost/json.hpp>

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include "rollouts_test_support.h"
#include "text_search.h"

namespace gym::rollouts {
namespace {

namespace json = boost::json;
using testing::obj;

using gym::test::count_of;

// Records `result` for `agent` and returns what was printed on stdout.
std::string record(Progress& progress, const std::string& agent, const json::object& result) {
  ::testing::internal::CaptureStdout();
  progress.record(agent, result);
  return ::testing::internal::GetCapturedStdout();
}

TEST(Progress, SummaryWhenAWholePercentIsCrossed) {
  Progress progress(std::map<std::string, std::size_t>{{"alpha", 50}, {"beta", 150}});
  EXPECT_EQ(record(progress, "alpha",
                   obj(R"({"reward":1.0,"tokens":10,"ok":true,"_ng_task_index":0,"text":"x"})")),
            "");  // 0.5 %
  EXPECT_EQ(progress.done(), 1u);
  auto printed =
      record(progress, "alpha", obj(R"({"reward":0.0,"tokens":20,"ok":false,"_ng_task_index":1})"));
  EXPECT_EQ(progress.done(), 2u);
  // "Finished 2 / 200 rollouts (1%) in H:MM:SS (R.RR rollouts/min). Examples left:"
  EXPECT_EQ(printed.rfind("Finished 2 / 200 rollouts (1%) in ", 0), 0u) << printed;
  auto left = printed.find(" rollouts/min). Examples left:\n");
  ASSERT_NE(left, std::string::npos) << printed;
  EXPECT_EQ(printed.substr(left + std::string(" rollouts/min). Examples left:\n").size()),
            "1. beta: 150\n"
            "2. alpha: 48\n"
            "Found 2 / 50 (4.00%) rollouts for `alpha`.\n"
            "{\n"
            "    \"reward\": 0.5,\n"
            "    \"tokens\": 15.0,\n"
            "    \"ok\": 0.5\n"
            "}\n");
}

TEST(Progress, EveryAgentWithResultsGetsItsMeans) {
  Progress progress(std::map<std::string, std::size_t>{{"alpha", 1}, {"beta", 3}});
  record(progress, "beta", obj(R"({"reward":1.0})"));                                // 25 %
  auto printed = record(progress, "alpha", obj(R"({"reward":0.25,"_private":5})"));  // 50 %
  auto left = printed.find("Examples left:\n");
  ASSERT_NE(left, std::string::npos) << printed;
  // alpha is finished: it is no longer listed as left, but its means are.
  EXPECT_EQ(printed.substr(left),
            "Examples left:\n"
            "1. beta: 2\n"
            "Found 1 / 1 (100.00%) rollouts for `alpha`.\n"
            "{\n"
            "    \"reward\": 0.25\n"
            "}\n"
            "Found 1 / 3 (33.33%) rollouts for `beta`.\n"
            "{\n"
            "    \"reward\": 1.0\n"
            "}\n");
}

TEST(Progress, OneSummaryPerThresholdUpTo99AndAHalf) {
  Progress progress(std::map<std::string, std::size_t>{{"alpha", 200}});
  std::string printed;
  for (int i = 0; i < 199; ++i) printed += record(progress, "alpha", obj(R"({"reward":1.0})"));
  // 1 %, 2 %, ..., 99 % and 99.5 %.
  EXPECT_EQ(count_of(printed, "Finished "), 100u);
  EXPECT_EQ(count_of(printed, "Finished 198 / 200 rollouts (99%)"), 1u);
  EXPECT_EQ(count_of(printed, "Finished 199 / 200 rollouts (99%)"), 1u);
  EXPECT_EQ(count_of(printed, "Finished 1 / 200"), 0u);
  // Nothing left to announce at 100 %.
  EXPECT_EQ(record(progress, "alpha", obj(R"({"reward":1.0})")), "");
  EXPECT_EQ(progress.done(), 200u);
}

TEST(Progress, AJumpOverSeveralPercentsPrintsOneSummary) {
  Progress progress(std::map<std::string, std::size_t>{{"alpha", 3}});
  auto first = record(progress, "alpha", obj("{}"));  // 33.3 %: crosses 1 ... 33
  EXPECT_EQ(count_of(first, "Finished "), 1u);
  EXPECT_EQ(first.rfind("Finished 1 / 3 rollouts (33%) in ", 0), 0u) << first;
  record(progress, "alpha", obj("{}"));
  auto last = record(progress, "alpha", obj("{}"));  // 100 %: crosses 67 ... 99.5
  EXPECT_EQ(count_of(last, "Finished "), 1u);
  EXPECT_EQ(last.rfind("Finished 3 / 3 rollouts (100%) in ", 0), 0u) << last;
  EXPECT_CONTAINS(last, "Examples left:\nFound 3 / 3 (100.00%) rollouts for `alpha`.\n{}\n");
}

// issue 13.13: --quiet keeps stdout free of the per-percent blocks.
TEST(Progress, WithoutSummariesNothingIsPrintedPerPercent) {
  Progress progress(std::map<std::string, std::size_t>{{"alpha", 4}}, /*summaries=*/false);
  std::string printed;
  for (int i = 0; i < 4; ++i) printed += record(progress, "alpha", obj(R"({"reward":1.0})"));
  EXPECT_EQ(printed, "");
  EXPECT_EQ(progress.done(), 4u);
}

std::size_t columns_of(const std::string& line) {
  std::size_t n = 0;
  for (char c : line) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// issue 13.13: the bar never wraps; it shrinks, then loses its label, then is cut.
TEST(ProgressBar, FitsTheTerminalWidth) {
  for (int columns : {20, 40, 60, 80, 100, 200}) {
    for (auto [done, total] :
         {std::pair<std::size_t, std::size_t>{0, 1}, {512, 1200}, {999'999, 1'000'000}}) {
      auto line = bar_line(done, total, 12345.6, columns);
      EXPECT_LE(columns_of(line), static_cast<std::size_t>(columns - 1))
          << columns << " columns: " << line;
      EXPECT_EQ(line.find('\n'), std::string::npos);
    }
  }
  auto at80 = bar_line(512, 1200, 10.0, 80);
  EXPECT_EQ(at80.rfind("Collecting rollouts:  42%|", 0), 0u) << at80;
  EXPECT_CONTAINS(at80, "512/1200 [0:00:10<0:00:13, 51.20 rollouts/s]");
  EXPECT_EQ(bar_line(512, 1200, 10.0, 40).rfind(" 42% 512/1200", 0), 0u);
}

TEST(ProgressBar, ColumnsComeFromTheEnvironmentWithoutATerminal) {
  // Under ctest stderr is not a terminal, so TIOCGWINSZ fails and COLUMNS decides.
  if (::isatty(STDERR_FILENO)) GTEST_SKIP() << "stderr is a terminal";
  ::setenv("COLUMNS", "123", 1);
  EXPECT_EQ(terminal_columns(), 123);
  ::setenv("COLUMNS", "wide", 1);
  EXPECT_EQ(terminal_columns(), 80);
  ::unsetenv("COLUMNS");
  EXPECT_EQ(terminal_columns(), 80);
}

}  // namespace
}  // namespace gym::rollouts
