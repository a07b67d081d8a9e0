#include "orchestrator/output_pump.h"

#include "core/console.h"
#include "telemetry/common/shutdown_report.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <optional>

namespace gym::orchestrator {

namespace {
using Clock = std::chrono::steady_clock;
constexpr auto kStopDrain = std::chrono::seconds(2);
}  // namespace

bool is_warning_or_error(std::string_view line) {
  std::size_t pos = 0;
  for (int word = 0; word < 4 && pos < line.size(); ++word) {
    while (pos < line.size() && line[pos] == ' ') ++pos;
    const auto end = std::min(line.find(' ', pos), line.size());
    // "WARNING:root:..." is one word; its level is the part before the first ':'.
    std::string level(line.substr(pos, std::min(line.find(':', pos), end) - pos));
    for (auto& ch : level) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (level == "warning" || level == "warn" || level == "error" || level == "critical" ||
        level == "fatal")
      return true;
    if (level == "info" || level == "debug" || level == "trace") return false;
    pos = end + 1;
  }
  return false;
}

OutputPump::OutputPump(std::vector<ServerOutput*> outputs) : outputs_(std::move(outputs)) {
  thread_ = std::thread([this] { loop(); });
}

void OutputPump::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

std::vector<std::string> OutputPump::tail(const ServerOutput& output) {
  std::lock_guard lock(mu_);
  return output.tail.lines();
}

void OutputPump::emit(ServerOutput& out, const OutputLine& output) {
  const std::string line = shown(output);
  std::lock_guard lock(mu_);
  // A server's account of its failed last export joins this process's one line.
  const auto report =
      hushed_ ? line.find(telemetry::shutdown_report::kLineStart) : std::string::npos;
  if (report != std::string::npos)
    telemetry::shutdown_report::hold_server(
        out.name, line.substr(report + telemetry::shutdown_report::kLineStart.size()));
  else if (!(hushed_ || core::console::quiet()) || is_warning_or_error(line))
    core::console::write(stdout, "(" + out.name + ") " + line);
  if (out.log) *out.log << line << '\n' << std::flush;
  out.tail.add(output);
}

void OutputPump::finish(ServerOutput& out) {
  if (auto last = out.lines.finish()) emit(out, *last);
}

void OutputPump::loop() {
  std::vector<char> buf(kMaxLineBytes);
  std::optional<Clock::time_point> drain_until;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<ServerOutput*> owners;
    for (auto* out : outputs_)
      if (out->fd >= 0) {
        fds.push_back({out->fd, POLLIN, 0});
        owners.push_back(out);
      }
    if (fds.empty()) break;
    if (stopping_ && !drain_until) drain_until = Clock::now() + kStopDrain;
    if (drain_until && (Clock::now() > *drain_until || ::poll(fds.data(), fds.size(), 0) <= 0))
      break;
    if (!drain_until && ::poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ServerOutput& out = *owners[i];
      auto n = ::read(out.fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        finish(out);
        ::close(out.fd);
        out.fd = -1;
        continue;
      }
      out.lines.feed({buf.data(), static_cast<std::size_t>(n)},
                     [&](OutputLine line) { emit(out, line); });
    }
  }
  // A pipe still open (a server's child holds it) may end in half a line: relay that too.
  for (auto* out : outputs_) finish(*out);
}

}  // namespace gym::orchestrator
