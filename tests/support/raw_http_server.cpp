// A raw-socket HTTP server that answers the way no well-behaved server does, for the tests of
// the HTTP client, the orchestrator's probes and the OTLP exporter: endless bodies, endless
// header or chunk-size lines, interim 1xx answers, a connection kept open despite
// `Connection: close`. Prints "LISTENING <port>" once bound; serves every connection on a thread
// of its own until killed. Each request (its head, and a Content-Length body) is read, then
// answered as the mode says:
//
//   endless-chunked     200, Transfer-Encoding: chunked, 64 KiB chunks for ever
//   endless-length      200 with Content-Length: 1000000000000, then bytes for ever
//   endless-close       200 without a length (the body ends at the close), bytes for ever
//   endless-chunk-line  200, chunked, then a chunk-size line that never ends ("fff...")
//   endless-header      200, then a header line that never ends
//   continue            "100 Continue" and "103 Early Hints", then 200 {"ok":true}
//   keep-alive          200 {"ok":true} with a Content-Length, the connection left open
//
// Flags: --mode MODE (default keep-alive); --path PREFIX=MODE (repeatable): requests whose path
// starts with PREFIX get MODE instead.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace {

struct Options {
  std::string mode = "keep-alive";
  std::vector<std::pair<std::string, std::string>> paths;  // prefix, mode
};

const char* const kModes[] = {"endless-chunked", "endless-length",     "endless-close",
                              "endless-header",  "endless-chunk-line", "continue",
                              "keep-alive"};

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const auto n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Sends `piece` until the client goes away.
void send_for_ever(int fd, const std::string& piece) {
  while (send_all(fd, piece)) {
  }
}

// Reads one request (head and Content-Length body); its path, or "" when the client went away.
std::string read_request(int fd, std::string& buffered) {
  char buf[8192];
  std::size_t head_end;
  while ((head_end = buffered.find("\r\n\r\n")) == std::string::npos) {
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return {};
    buffered.append(buf, static_cast<std::size_t>(n));
  }
  std::string head = buffered.substr(0, head_end);
  for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::size_t length = 0;
  if (const auto at = head.find("\r\ncontent-length:"); at != std::string::npos)
    length = std::stoul(head.substr(at + 17));
  while (buffered.size() < head_end + 4 + length) {
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return {};
    buffered.append(buf, static_cast<std::size_t>(n));
  }
  const auto first_space = buffered.find(' ');
  const auto second_space = buffered.find(' ', first_space + 1);
  std::string path = buffered.substr(first_space + 1, second_space - first_space - 1);
  buffered.erase(0, head_end + 4 + length);
  return path.empty() ? "/" : path;
}

void serve(int fd, const Options& options) {
  std::string buffered;
  for (;;) {
    const std::string path = read_request(fd, buffered);
    if (path.empty()) break;
    std::string mode = options.mode;
    for (const auto& [prefix, m] : options.paths)
      if (path.rfind(prefix, 0) == 0) mode = m;
    const std::string ok_body = "{\"ok\":true}";
    const std::string ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                           std::to_string(ok_body.size()) + "\r\n\r\n" + ok_body;
    const std::string piece(64 * 1024, 'x');
    if (mode == "endless-chunked") {
      send_all(fd,
               "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
               "Transfer-Encoding: chunked\r\n\r\n");
      send_for_ever(fd, "10000\r\n" + piece + "\r\n");
    } else if (mode == "endless-length") {
      send_all(fd,
               "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
               "Content-Length: 1000000000000\r\n\r\n");
      send_for_ever(fd, piece);
    } else if (mode == "endless-close") {
      send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n");
      send_for_ever(fd, piece);
    } else if (mode == "endless-chunk-line") {
      send_all(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
      send_for_ever(fd, std::string(piece.size(), 'f'));
    } else if (mode == "endless-header") {
      send_all(fd, "HTTP/1.1 200 OK\r\nX-Endless: ");
      send_for_ever(fd, piece);
    } else if (mode == "continue") {
      if (!send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n")) break;
      if (!send_all(fd, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"))
        break;
      if (!send_all(fd, ok)) break;
      continue;
    } else {  // keep-alive: answered, and the connection stays open whatever the client asked
      if (!send_all(fd, ok)) break;
      continue;
    }
    break;
  }
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  const auto known = [](const std::string& mode) {
    for (const char* m : kModes)
      if (mode == m) return true;
    return false;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--mode" && i + 1 < argc && known(argv[i + 1])) {
      options.mode = argv[++i];
    } else if (flag == "--path" && i + 1 < argc) {
      const std::string arg = argv[++i];
      const auto eq = arg.find('=');
      if (eq == std::string::npos || !known(arg.substr(eq + 1))) {
        std::cerr << "--path PREFIX=MODE, not " << arg << "\n";
        return 2;
      }
      options.paths.emplace_back(arg.substr(0, eq), arg.substr(eq + 1));
    } else {
      std::cerr << "usage: gym_raw_http_server [--mode MODE] [--path PREFIX=MODE]...\n";
      return 2;
    }
  }
  ::signal(SIGPIPE, SIG_IGN);
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int yes = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listener, 64) != 0) {
    std::perror("gym_raw_http_server: bind");
    return 1;
  }
  socklen_t len = sizeof a;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  std::printf("LISTENING %u\n", ntohs(a.sin_port));
  std::fflush(stdout);
  for (;;) {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::thread(serve, fd, std::cref(options)).detach();
  }
}
