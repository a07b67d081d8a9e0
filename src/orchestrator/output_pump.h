#pragma once
// Relays the servers' output (stdout and stderr, one pipe each) line by line, prefixed with the
// instance name, through the console (never on the progress bar's line). Quiet (`gym eval run
// -q`), and once the servers are being stopped, only their warnings and errors are printed: the
// rest goes to their logs and tails. One thread polls every pipe and reads at most one buffer from
// each ready one per round, so a server that floods its pipe delays the others by one buffer,
// never more; a line longer than kMaxLineBytes is relayed cut (server_output.h), so no line costs
// more memory than that.
#include "orchestrator/server_output.h"

#include <atomic>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace gym::orchestrator {

// One server's output as the pump relays it.
struct ServerOutput {
  std::string name;    // the instance: its lines are shown as "(name) line"
  int fd = -1;         // the read end of its output pipe; the pump closes it at its end
  LineSplitter lines;  // what it printed, cut into lines of bounded length
  OutputTail tail;     // its last lines, for an error message
  std::unique_ptr<std::ofstream> log;  // nemo_gym_log_dir/<name>.log, when set
};

// Whether a server's line is a warning or an error: the level word of our servers' log lines
// ("2025-01-01 12:00:00.000 warning ..."), or of Python's logging ("WARNING:root:...", uvicorn's
// "ERROR:    ...") among the first words.
bool is_warning_or_error(std::string_view line);

class OutputPump {
 public:
  // Starts relaying; the outputs must outlive the pump.
  explicit OutputPump(std::vector<ServerOutput*> outputs);
  ~OutputPump() { stop(); }
  OutputPump(const OutputPump&) = delete;
  OutputPump& operator=(const OutputPump&) = delete;

  // Relays what is already in the pipes (a server that keeps printing is read for at most
  // kStopDrain more), then the unfinished last lines, and ends the thread.
  void stop();
  // The last lines of `output`, while the pump may still add to them.
  std::vector<std::string> tail(const ServerOutput& output);
  // The servers are being stopped on purpose: their "received signal 15, shutting down" is no
  // news.
  void hush() { hushed_ = true; }

 private:
  void emit(ServerOutput& out, const OutputLine& line);
  void finish(ServerOutput& out);
  void loop();

  std::vector<ServerOutput*> outputs_;
  std::thread thread_;
  std::mutex mu_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> hushed_{false};
};

}  // namespace gym::orchestrator
