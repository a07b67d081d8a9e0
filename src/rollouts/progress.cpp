#include "rollouts/progress.h"

#include "core/console.h"
#include "core/json_text.h"
#include "rollouts/rows.h"

#include <boost/json.hpp>

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gym::rollouts {
namespace json = boost::json;

namespace {

std::string clock_text(double seconds) {  // H:MM:SS like Python's timedelta
  auto s = static_cast<long>(seconds);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s % 3600 / 60, s % 60);
  return buf;
}

// The number of code points of UTF-8 `text` (the bar's blocks are 3 bytes, one column).
std::size_t display_width(const std::string& text) {
  std::size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

int terminal_columns() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (const char* env = std::getenv("COLUMNS"); env && *env) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (*end == '\0' && n > 0 && n < 10'000) return static_cast<int>(n);
  }
  return 80;
}

std::string bar_line(std::size_t done, std::size_t total, double elapsed, int columns) {
  double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0;
  double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1;
  char head[64], tail[160];
  std::snprintf(head, sizeof head, "Collecting rollouts: %3d%%", static_cast<int>(frac * 100));
  std::snprintf(tail, sizeof tail, "%zu/%zu [%s<%s, %.2f rollouts/s]", done, total,
                clock_text(elapsed).c_str(), clock_text(eta).c_str(), rate);
  const int width = std::max(columns - 1, 1);
  constexpr int kMinBar = 5, kMaxBar = 30;
  std::string label = head;
  int room = width - static_cast<int>(label.size() + std::strlen(tail)) - 3;  // "|", "| "
  if (room < kMinBar) {
    label = label.substr(std::strlen("Collecting rollouts: "));  // just the percent
    room = width - static_cast<int>(label.size() + std::strlen(tail)) - 3;
  }
  std::string line = label;
  if (room >= kMinBar) {
    int bar_width = std::min(room, kMaxBar);
    int filled = static_cast<int>(frac * bar_width);
    line += "|";
    for (int i = 0; i < bar_width; ++i) line += i < filled ? "\u2588" : " ";
    line += "| ";
  } else {
    line += " ";
  }
  line += tail;
  if (display_width(line) > static_cast<std::size_t>(width)) {
    // Only ASCII is left here (no bar): cut bytes.
    line.resize(static_cast<std::size_t>(width));
  }
  return line;
}

Progress::Progress(const std::map<std::string, std::size_t>& per_agent, bool summaries)
    : summaries_(summaries) {
  for (const auto& [agent, n] : per_agent) {
    if (n == 0) continue;
    left_[agent] = n;
    total_ += n;
  }
  for (int p = 1; p <= 99; ++p) thresholds_.push_back(p);
  thresholds_.push_back(99.5);
  tty_ = ::isatty(STDERR_FILENO) == 1;
  if (tty_) columns_ = terminal_columns();
}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

void Progress::record(const std::string& agent, const json::object& result) {
  ++done_;
  if (auto it = left_.find(agent); it != left_.end() && --it->second == 0) left_.erase(it);
  ++finished_[agent];
  auto& sums = sums_[agent];
  for (const auto& kv : result) {
    if (kv.key().starts_with("_")) continue;
    const auto& v = kv.value();
    if (!(v.is_number() || v.is_bool())) continue;
    double x = v.is_bool() ? (v.get_bool() ? 1.0 : 0.0) : v.to_number<double>();
    auto& slot = sums[kv.key()];
    slot = (slot.is_double() ? slot.get_double() : 0.0) + x;
  }
  double pct = 100.0 * static_cast<double>(done_) / static_cast<double>(total_);
  bool crossed = false;
  while (!thresholds_.empty() && pct >= thresholds_.front()) {
    thresholds_.erase(thresholds_.begin());
    crossed = true;
  }
  if (crossed && summaries_) print_summary();
  draw_bar(false);
}

void Progress::tick(std::size_t in_flight, double oldest_seconds) {
  in_flight_ = in_flight;
  oldest_seconds_ = oldest_seconds;
  draw_bar(false);
}

void Progress::print_summary() {
  double elapsed = elapsed_seconds();
  double per_min = elapsed > 0 ? static_cast<double>(done_) / (elapsed / 60) : 0;
  char head[256];
  std::snprintf(head, sizeof head, "Finished %zu / %zu rollouts (%d%%) in %s (%.2f rollouts/min). ",
                done_, total_, static_cast<int>(100.0 * done_ / total_),
                clock_text(elapsed).c_str(), per_min);
  std::string text = head;
  text += "Examples left:\n";
  std::vector<std::pair<std::string, std::size_t>> left(left_.begin(), left_.end());
  std::stable_sort(left.begin(), left.end(), [](auto& a, auto& b) { return a.second > b.second; });
  for (std::size_t i = 0; i < left.size(); ++i)
    text +=
        std::to_string(i + 1) + ". " + left[i].first + ": " + std::to_string(left[i].second) + "\n";
  for (const auto& [agent, sums] : sums_) {
    std::size_t n = finished_[agent];
    std::size_t agent_total = n + (left_.count(agent) ? left_[agent] : 0);
    char line[512];
    std::snprintf(line, sizeof line, "Found %zu / %zu (%.2f%%) rollouts for `%s`.\n", n,
                  agent_total, 100.0 * n / agent_total, agent.c_str());
    text += line;
    json::object means;
    for (const auto& kv : sums) means[kv.key()] = kv.value().get_double() / static_cast<double>(n);
    text += core::render_json_indented(means, 4) + "\n";
  }
  print(text);
}

void Progress::print(const std::string& text) { core::console::print(text); }

void Progress::draw_bar(bool force) {
  auto now = Clock::now();
  auto interval = tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(10'000);
  if (!force && done_ < total_ && now - last_draw_ < interval) return;
  last_draw_ = now;
  double elapsed = elapsed_seconds();
  if (!tty_) {
    if (core::console::quiet()) return;  // -q: the result only
    double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0;
    double eta = rate > 0 ? static_cast<double>(total_ - done_) / rate : 0;
    double frac = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 1;
    std::string running;
    if (in_flight_ > 0 && done_ < total_)
      running =
          ", " + std::to_string(in_flight_) + " in flight, oldest " + clock_text(oldest_seconds_);
    char line[256];
    std::snprintf(line, sizeof line,
                  "Collecting rollouts: %3d%% %zu/%zu [%s<%s, %.2f rollouts/s]%s",
                  static_cast<int>(frac * 100), done_, total_, clock_text(elapsed).c_str(),
                  clock_text(eta).c_str(), rate, running.c_str());
    core::console::write(stderr, line);
    return;
  }
  // The console erases and redraws it around every other line written meanwhile.
  core::console::show_status(bar_line(done_, total_, elapsed, columns_));
  bar_shown_ = true;
}

void Progress::finish() {
  // -q: the bar was only a live view; the result follows.
  if (bar_shown_) core::console::end_status(!core::console::quiet());
  bar_shown_ = false;
}

}  // namespace gym::rollouts
