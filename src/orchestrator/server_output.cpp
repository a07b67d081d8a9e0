#include "orchestrator/server_output.h"

#include <algorithm>
#include <cstring>

namespace gym::orchestrator {

std::string shown(const OutputLine& line, std::size_t limit) {
  if (line.length <= limit && line.text.size() == line.length) return line.text;
  return line.text.substr(0, limit) + "... [line truncated: " + std::to_string(line.length) +
         " bytes]";
}

void LineSplitter::feed(std::string_view data, const std::function<void(OutputLine)>& emit) {
  while (!data.empty()) {
    const void* found = std::memchr(data.data(), '\n', data.size());
    const std::size_t piece =
        found ? static_cast<std::size_t>(static_cast<const char*>(found) - data.data())
              : data.size();
    // Keep what fits under the limit; the rest of the line is only counted.
    const std::size_t room = max_line_ - std::min(max_line_, pending_.text.size());
    pending_.text.append(data.data(), std::min(piece, room));
    pending_.length += piece;
    if (!found) return;
    emit(std::move(pending_));
    pending_ = OutputLine{};
    data.remove_prefix(piece + 1);
  }
}

std::optional<OutputLine> LineSplitter::finish() {
  if (pending_.length == 0) return std::nullopt;
  OutputLine line = std::move(pending_);
  pending_ = OutputLine{};
  return line;
}

void OutputTail::add(const OutputLine& line) {
  lines_.push_back(shown(line, kTailLineBytes));
  bytes_ += lines_.back().size();
  while (lines_.size() > 1 && (lines_.size() > kTailLines || bytes_ > kTailBytes)) {
    bytes_ -= lines_.front().size();
    lines_.pop_front();
  }
}

}  // namespace gym::orchestrator
