#pragma once
// A server's stdout+stderr as the orchestrator relays it: split into lines with bounded memory
// whatever the server prints (a 200 MB line without a newline costs kMaxLineBytes, not 200 MB),
// each byte looked at once, and the short tail an error message quotes. Not thread-safe: one
// splitter and one tail per server, owned by the output pump.
#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gym::orchestrator {

// The longest line relayed whole; the rest of a longer one is counted, not kept.
inline constexpr std::size_t kMaxLineBytes = 64 * 1024;
// What an error message quotes of a server's last output.
inline constexpr std::size_t kTailLines = 20;
inline constexpr std::size_t kTailBytes = 4 * 1024;
inline constexpr std::size_t kTailLineBytes = 1024;

struct OutputLine {
  std::string text;        // the line's first bytes (at most the splitter's limit), no '\n'
  std::size_t length = 0;  // the whole line's length
};

// `line.text` cut to `limit` bytes, followed by "... [line truncated: N bytes]" when the line
// (N bytes) was longer than what is shown.
std::string shown(const OutputLine& line, std::size_t limit = kMaxLineBytes);

class LineSplitter {
 public:
  explicit LineSplitter(std::size_t max_line = kMaxLineBytes) : max_line_(max_line) {}
  // Takes the next bytes of the stream; `emit` gets every line they complete. Only the new bytes
  // are searched for '\n', and at most `max_line` bytes of a line are kept.
  void feed(std::string_view data, const std::function<void(OutputLine)>& emit);
  // The unfinished last line (the stream ended, or the pump stops), if any; the splitter is then
  // empty.
  std::optional<OutputLine> finish();

 private:
  std::size_t max_line_;
  OutputLine pending_;
};

// The last lines of a server's output, for an error message: at most kTailLines lines of at most
// kTailLineBytes each (a longer one is cut with the truncation marker), kTailBytes in all (the
// last line always stays).
class OutputTail {
 public:
  void add(const OutputLine& line);
  std::vector<std::string> lines() const { return {lines_.begin(), lines_.end()}; }
  bool empty() const { return lines_.empty(); }

 private:
  std::deque<std::string> lines_;
  std::size_t bytes_ = 0;
};

}  // namespace gym::orchestrator
