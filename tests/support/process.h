#pragma once
// Test support: start a real server process, read its port, stop it; raw socket helpers.
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace gym::test {

// A child process whose stdout announces "LISTENING <port>" (or is otherwise captured).
class ChildProcess {
 public:
  // Starts `argv[0]` with the given arguments and extra environment ("K=V"). With
  // `merge_stderr` its stderr (log lines) goes into the same captured pipe as stdout.
  ChildProcess(std::vector<std::string> argv, std::vector<std::string> env = {},
               bool merge_stderr = false);
  ~ChildProcess();  // SIGKILL and reap if still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Reads stdout lines until one starts with `prefix`; returns the rest of that line.
  // Fails (returns "") if the process exits or `limit` passes first (a hang guard).
  std::string wait_for_line(const std::string& prefix,
                            std::chrono::seconds limit = std::chrono::seconds(30));
  int wait_port();  // wait_for_line("LISTENING ") as a port number
  void signal(int sig);
  // Waits for exit (guard `limit`); returns the exit code, 128+signal, or -1 on timeout.
  int wait_exit(std::chrono::seconds limit = std::chrono::seconds(20));
  bool running();
  const std::string& output() const { return output_; }  // stdout read so far
  // Reads the rest of stdout until the process closes it or `limit` passes.
  void drain(std::chrono::seconds limit = std::chrono::seconds(20));

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int status_ = -1;
  std::string output_;
  std::string pending_;
};

// A shell command whose stdout and stderr go to a log file (a long collection prints more than a
// pipe holds); stopped with SIGTERM (then SIGKILL) at destruction if still running.
class LoggedProcess {
 public:
  LoggedProcess(const std::string& command, std::string log);
  ~LoggedProcess();
  // Polls the log until it contains `text`; false when the process exits or `limit` passes first.
  bool wait_for(const std::string& text, std::chrono::seconds limit = std::chrono::seconds(60));
  std::string output() const;  // the log so far
  ChildProcess& child() { return child_; }

 private:
  std::string log_;
  ChildProcess child_;
};

// Runs a shell command to completion; its exit code and stdout+stderr.
struct CommandResult {
  int code;
  std::string output;
};
CommandResult run_command(const std::string& command);

// Path of a built binary next to the test binaries (CMake passes GYM_BUILD_DIR).
std::string build_path(const std::string& relative);

// Opens a TCP connection to 127.0.0.1:port; returns the fd (asserts on failure).
int connect_tcp(int port);
void send_all(int fd, std::string_view data);
// Reads until the peer closes or `limit` passes; returns what arrived.
std::string read_until_close(int fd, std::chrono::milliseconds limit);
// Reads one complete HTTP response (head + Content-Length body) or "" on close/timeout.
std::string read_response(int fd, std::chrono::milliseconds limit);
// One request over a fresh connection; returns the raw response text.
std::string http_raw(int port, const std::string& request,
                     std::chrono::milliseconds limit = std::chrono::milliseconds(10000));
// Status code of a raw response ("HTTP/1.1 404 ..." -> 404), -1 if none.
int status_of(const std::string& raw_response);
std::string body_of(const std::string& raw_response);
std::string header_of(const std::string& raw_response, const std::string& name);
// A POST request text with a JSON body.
std::string post(const std::string& path, const std::string& body,
                 const std::string& extra_headers = "");

}  // namespace gym::test
