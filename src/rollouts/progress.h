#pragma once
// Progress of a collection (docs/guides/evaluation.md#output-while-running): a bar on stderr when
// it is a terminal (plain lines every 10 s when it is not), and NeMo Gym's per-percent summaries on
// stdout.
#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gym::rollouts {

// The columns of the terminal on stderr (TIOCGWINSZ), else $COLUMNS, else 80.
int terminal_columns();

// One redraw of the bar, at most `columns` - 1 characters wide (a line as wide as the terminal
// wraps on some terminals): "Collecting rollouts:  42%|████   | 42/100 [0:00:05<0:00:07, ...]".
// The bar shrinks first, then the label goes, then the text is cut.
std::string bar_line(std::size_t done, std::size_t total, double elapsed_seconds, int columns);

class Progress {
 public:
  // `per_agent`: the rollouts about to be dispatched, by agent. Without `summaries` the
  // per-percent blocks are not printed (progress_summaries: false).
  explicit Progress(const std::map<std::string, std::size_t>& per_agent, bool summaries = true);
  // One finished rollout (success or failure): counts it, adds its numeric fields to the agent's
  // running means, prints the percent summary when a threshold is crossed, refreshes the bar.
  void record(const std::string& agent, const boost::json::object& result);
  // The heartbeat (every second): rollouts in flight and the oldest one's age in seconds. Redraws
  // the bar; without a terminal, a line every 10 s says what runs even when nothing finishes.
  void tick(std::size_t in_flight, double oldest_seconds);
  // Prints a line on stdout without tearing the bar.
  void print(const std::string& text);
  // Removes the bar (after the last record).
  void finish();

  std::size_t done() const { return done_; }

 private:
  void print_summary();
  void draw_bar(bool force);
  double elapsed_seconds() const;

  using Clock = std::chrono::steady_clock;
  std::size_t total_ = 0, done_ = 0;
  std::size_t in_flight_ = 0;  // as of the last tick
  double oldest_seconds_ = 0;
  std::map<std::string, std::size_t> left_;          // agent -> rollouts not finished
  std::map<std::string, std::size_t> finished_;      // agent -> rollouts finished
  std::map<std::string, boost::json::object> sums_;  // agent -> field -> running sum
  std::vector<double> thresholds_;                   // percents still to announce, ascending
  Clock::time_point start_ = Clock::now(), last_draw_{};
  bool tty_ = false, bar_shown_ = false, summaries_ = true;
  int columns_ = 80;
};

}  // namespace gym::rollouts
