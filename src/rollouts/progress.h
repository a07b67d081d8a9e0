#pragma once
// Progress of a collection (runtime.md 7.8): a bar on stderr when it is a terminal (plain lines
// every 10 s when it is not), and NeMo Gym's per-percent summaries on stdout.
#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gym::rollouts {

class Progress {
 public:
  // `rows` are the rows about to be dispatched (their agent_ref names the agent).
  explicit Progress(const std::vector<boost::json::object>& rows);
  // One finished rollout (success or failure): counts it, adds its numeric fields to the agent's
  // running means, prints the percent summary when a threshold is crossed, refreshes the bar.
  void record(const std::string& agent, const boost::json::object& result);
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
  std::map<std::string, std::size_t> left_;          // agent -> rollouts not finished
  std::map<std::string, std::size_t> finished_;      // agent -> rollouts finished
  std::map<std::string, boost::json::object> sums_;  // agent -> field -> running sum
  std::vector<double> thresholds_;                   // percents still to announce, ascending
  Clock::time_point start_ = Clock::now(), last_draw_{};
  bool tty_ = false, bar_shown_ = false;
};

}  // namespace gym::rollouts
