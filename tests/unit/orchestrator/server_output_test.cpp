// How the orchestrator cuts a server's output into lines (orchestrator/server_output.h): split
// across reads, bounded per line whatever the server prints, and the tail an error quotes.
#include "orchestrator/server_output.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gym::orchestrator {
namespace {

struct Collected {
  std::vector<OutputLine> lines;
  std::function<void(OutputLine)> sink() {
    return [this](OutputLine line) { lines.push_back(std::move(line)); };
  }
};

TEST(LineSplitter, LinesSplitAcrossReadsComeOutWhole) {
  LineSplitter splitter;
  Collected out;
  splitter.feed("first li", out.sink());
  EXPECT_TRUE(out.lines.empty());
  splitter.feed("ne\nsecond\n\nthi", out.sink());
  splitter.feed("rd", out.sink());
  ASSERT_EQ(out.lines.size(), 3u);
  EXPECT_EQ(out.lines[0].text, "first line");
  EXPECT_EQ(out.lines[0].length, 10u);
  EXPECT_EQ(out.lines[1].text, "second");
  EXPECT_EQ(out.lines[2].text, "");  // an empty line is a line
  auto last = splitter.finish();
  ASSERT_TRUE(last);
  EXPECT_EQ(last->text, "third");
  EXPECT_FALSE(splitter.finish());  // nothing twice
}

TEST(LineSplitter, ALongLineKeepsItsFirstBytesAndCountsTheRest) {
  LineSplitter splitter(16);
  Collected out;
  // 40 bytes of one line over three reads, then a short line in the same read as its end.
  splitter.feed(std::string(10, 'a'), out.sink());
  splitter.feed(std::string(20, 'b'), out.sink());
  splitter.feed(std::string(10, 'c') + "\nshort\n", out.sink());
  ASSERT_EQ(out.lines.size(), 2u);
  EXPECT_EQ(out.lines[0].text, std::string(10, 'a') + std::string(6, 'b'));
  EXPECT_EQ(out.lines[0].length, 40u);
  EXPECT_EQ(shown(out.lines[0], 16),
            std::string(10, 'a') + std::string(6, 'b') + "... [line truncated: 40 bytes]");
  EXPECT_EQ(out.lines[1].text, "short");
  EXPECT_EQ(shown(out.lines[1], 16), "short");
}

TEST(LineSplitter, AHugeLineCostsAtMostTheLimit) {
  // 64 MiB without a newline in 64 KiB reads: the splitter never holds more than the limit.
  LineSplitter splitter;
  Collected out;
  const std::string chunk(64 * 1024, 'x');
  for (int i = 0; i < 1024; ++i) splitter.feed(chunk, out.sink());
  EXPECT_TRUE(out.lines.empty());
  splitter.feed("tail\nnext\n", out.sink());
  ASSERT_EQ(out.lines.size(), 2u);
  EXPECT_EQ(out.lines[0].text.size(), kMaxLineBytes);
  EXPECT_EQ(out.lines[0].length, 64u * 1024 * 1024 + 4);
  EXPECT_TRUE(shown(out.lines[0]).ends_with("... [line truncated: 67108868 bytes]"));
  EXPECT_EQ(out.lines[1].text, "next");
}

TEST(OutputTail, KeepsTheLastLinesWithinItsBounds) {
  OutputTail tail;
  for (int i = 0; i < 100; ++i)
    tail.add({"line " + std::to_string(i), std::to_string(i).size() + 5});
  auto lines = tail.lines();
  ASSERT_EQ(lines.size(), kTailLines);
  EXPECT_EQ(lines.front(), "line 80");
  EXPECT_EQ(lines.back(), "line 99");

  // A long line is quoted cut, with its real length; the total stays under kTailBytes.
  tail.add({std::string(kMaxLineBytes, 'x'), 20'000'000});
  lines = tail.lines();
  EXPECT_EQ(lines.back(),
            std::string(kTailLineBytes, 'x') + "... [line truncated: 20000000 bytes]");
  std::size_t total = 0;
  for (const auto& line : lines) total += line.size();
  EXPECT_LE(total, kTailBytes);
  for (int i = 0; i < 10; ++i) tail.add({std::string(3000, 'y'), 3000});
  lines = tail.lines();
  total = 0;
  for (const auto& line : lines) total += line.size();
  EXPECT_LE(total, kTailBytes);
  EXPECT_GE(lines.size(), 1u);
}

}  // namespace
}  // namespace gym::orchestrator
