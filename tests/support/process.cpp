#include "process.h"

#include "files.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace gym::test {
using Clock = std::chrono::steady_clock;

ChildProcess::ChildProcess(std::vector<std::string> argv, std::vector<std::string> env,
                           bool merge_stderr) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::dup2(pipefd[1], STDOUT_FILENO);
    if (merge_stderr) ::dup2(pipefd[1], STDERR_FILENO);
    for (auto& e : env) ::putenv(e.data());
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    std::fprintf(stderr, "exec %s failed: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(pipefd[1]);
  out_fd_ = pipefd[0];
}

ChildProcess::~ChildProcess() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    wait_exit(std::chrono::seconds(5));
  }
  if (out_fd_ >= 0) ::close(out_fd_);
}

std::string ChildProcess::wait_for_line(const std::string& prefix, std::chrono::seconds limit) {
  auto deadline = Clock::now() + limit;
  for (;;) {
    auto nl = pending_.find('\n');
    while (nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
      nl = pending_.find('\n');
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return "";
    pollfd p{out_fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return "";
    char buf[4096];
    auto n = ::read(out_fd_, buf, sizeof buf);
    if (n <= 0) return "";
    output_.append(buf, static_cast<std::size_t>(n));
    pending_.append(buf, static_cast<std::size_t>(n));
  }
}

void ChildProcess::drain(std::chrono::seconds limit) {
  auto deadline = Clock::now() + limit;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return;
    pollfd p{out_fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return;
    char buf[4096];
    auto n = ::read(out_fd_, buf, sizeof buf);
    if (n <= 0) return;
    output_.append(buf, static_cast<std::size_t>(n));
    pending_.append(buf, static_cast<std::size_t>(n));
  }
}

int ChildProcess::wait_port() {
  auto s = wait_for_line("LISTENING ");
  return s.empty() ? -1 : std::stoi(s);
}

void ChildProcess::signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

bool ChildProcess::running() {
  if (status_ != -1) return false;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) == pid_) {
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return false;
  }
  return true;
}

int ChildProcess::wait_exit(std::chrono::seconds limit) {
  auto deadline = Clock::now() + limit;
  while (running()) {
    if (Clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

CommandResult run_command(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  char buf[4096];
  while (auto n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string build_path(const std::string& relative) {
  return std::string(GYM_BUILD_DIR) + "/" + relative;
}

int connect_tcp(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    auto n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::string read_until_close(int fd, std::chrono::milliseconds limit) {
  std::string out;
  auto deadline = Clock::now() + limit;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return out;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return out;
    char buf[16384];
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

std::string read_response(int fd, std::chrono::milliseconds limit) {
  std::string out;
  auto deadline = Clock::now() + limit;
  for (;;) {
    auto head_end = out.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      auto cl = header_of(out, "content-length");
      std::size_t need = head_end + 4 + (cl.empty() ? 0 : std::stoull(cl));
      if (out.size() >= need) return out.substr(0, need);
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return "";
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return "";
    char buf[16384];
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return "";
    out.append(buf, static_cast<std::size_t>(n));
  }
}

std::string http_raw(int port, const std::string& request, std::chrono::milliseconds limit) {
  int fd = connect_tcp(port);
  if (fd < 0) return "";
  send_all(fd, request);
  auto r = read_response(fd, limit);
  ::close(fd);
  return r;
}

int status_of(const std::string& raw) {
  if (raw.rfind("HTTP/1.", 0) != 0 || raw.size() < 12) return -1;
  return std::stoi(raw.substr(9, 3));
}

std::string body_of(const std::string& raw) {
  auto p = raw.find("\r\n\r\n");
  return p == std::string::npos ? "" : raw.substr(p + 4);
}

std::string header_of(const std::string& raw, const std::string& name) {
  auto head = raw.substr(0, raw.find("\r\n\r\n"));
  std::size_t pos = 0;
  while ((pos = head.find("\r\n", pos)) != std::string::npos) {
    pos += 2;
    auto colon = head.find(':', pos);
    auto eol = head.find("\r\n", pos);
    if (colon == std::string::npos || (eol != std::string::npos && colon > eol)) continue;
    if (strncasecmp(head.c_str() + pos, name.c_str(), name.size()) == 0 &&
        colon - pos == name.size()) {
      auto v = head.substr(colon + 1, (eol == std::string::npos ? head.size() : eol) - colon - 1);
      while (!v.empty() && v.front() == ' ') v.erase(0, 1);
      return v;
    }
  }
  return "";
}

std::string post(const std::string& path, const std::string& body,
                 const std::string& extra_headers) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
         extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

LoggedProcess::LoggedProcess(const std::string& command, std::string log)
    : log_(std::move(log)), child_({"/bin/sh", "-c", "exec " + command + " >" + log_ + " 2>&1"}) {}

LoggedProcess::~LoggedProcess() {
  if (child_.running()) {
    child_.signal(SIGTERM);
    if (child_.wait_exit(std::chrono::seconds(20)) == -1) child_.signal(SIGKILL);
  }
}

bool LoggedProcess::wait_for(const std::string& text, std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (output().find(text) != std::string::npos) return true;
    if (!child_.running()) return output().find(text) != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::string LoggedProcess::output() const { return read_text(log_); }

}  // namespace gym::test
