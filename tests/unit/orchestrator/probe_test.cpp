// The readiness and status probe (runtime.md 3.5): orchestrator/probe.h's http_get against a
// loopback socket the test owns (OS-chosen port).
#include "orchestrator/probe.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "orchestrator_test_support.h"

namespace gym::orchestrator {
namespace {

using namespace std::chrono_literals;
using testing::Socket;

// Accepts one connection on the listening `server`, reads the request head into `request`,
// writes `reply` and closes the connection.
std::thread serve_once(const Socket& server, std::string reply, std::string& request) {
  return std::thread([fd = server.fd(), reply = std::move(reply), &request] {
    int conn = ::accept(fd, nullptr, nullptr);
    if (conn < 0) return;
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      auto n = ::recv(conn, buf, sizeof buf, 0);
      if (n <= 0) break;
      request.append(buf, static_cast<std::size_t>(n));
    }
    for (std::size_t sent = 0; sent < reply.size();) {
      auto n = ::send(conn, reply.data() + sent, reply.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    ::close(conn);
  });
}

TEST(HttpGet, AnswerStatusAndBody) {
  Socket server;
  server.listen();
  std::string request;
  auto thread = serve_once(
      server, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"status\":\"ok\"}",
      request);
  auto r = http_get("127.0.0.1", server.port(), "/", 10s);
  thread.join();
  EXPECT_EQ(r.outcome, ProbeOutcome::success);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{\"status\":\"ok\"}");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(request, "GET / HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(server.port()) +
                         "\r\nConnection: close\r\n\r\n");
}

TEST(HttpGet, SendsTheGivenHeaders) {
  Socket server;
  server.listen();
  std::string request;
  auto thread = serve_once(server, "HTTP/1.1 401 Unauthorized\r\n\r\n", request);
  auto r = http_get("127.0.0.1", server.port(), "/v1/models", 10s,
                    {{"X-Team", "rl"}, {"Authorization", "Bearer k"}});
  thread.join();
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(request, "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(server.port()) +
                         "\r\nX-Team: rl\r\nAuthorization: Bearer k\r\nConnection: close\r\n\r\n");
}

TEST(HttpGet, AnyStatusIsAnAnswer) {
  Socket server;
  server.listen();
  std::string request;
  auto thread = serve_once(server, "HTTP/1.0 503 Service Unavailable\r\n\r\nbusy", request);
  auto r = http_get("127.0.0.1", server.port(), "/server_instances", 10s);
  thread.join();
  EXPECT_EQ(r.outcome, ProbeOutcome::success);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body, "busy");
  EXPECT_EQ(request.rfind("GET /server_instances HTTP/1.1\r\n", 0), 0u) << request;
}

TEST(HttpGet, ChunkedBodyIsDecoded) {
  Socket server;
  server.listen();
  std::string request;
  auto thread = serve_once(server,
                           "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n"
                           "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
                           request);
  auto r = http_get("127.0.0.1", server.port(), "/", 10s);
  thread.join();
  EXPECT_EQ(r.outcome, ProbeOutcome::success);
  EXPECT_EQ(r.body, "hello world");
}

TEST(HttpGet, SomethingElseThanHttpIsAnUnknownError) {
  Socket server;
  server.listen();
  std::string request;
  auto thread = serve_once(server, "SSH-2.0-OpenSSH_9.0\r\n\r\n", request);
  auto r = http_get("127.0.0.1", server.port(), "/", 10s);
  thread.join();
  EXPECT_EQ(r.outcome, ProbeOutcome::unknown_error);
  EXPECT_EQ(r.error, "not an HTTP answer");
}

TEST(HttpGet, ClosingWithoutAnswerIsAnUnknownError) {
  Socket server;
  server.listen();
  std::string request;
  auto thread = serve_once(server, "", request);
  auto r = http_get("127.0.0.1", server.port(), "/", 10s);
  thread.join();
  EXPECT_EQ(r.outcome, ProbeOutcome::unknown_error);
  EXPECT_EQ(r.error, "not an HTTP answer");
}

TEST(HttpGet, NobodyListeningIsAConnectionError) {
  Socket bound;  // bound, never listening: connections are refused
  auto r = http_get("127.0.0.1", bound.port(), "/", 10s);
  EXPECT_EQ(r.outcome, ProbeOutcome::connection_error);
  EXPECT_EQ(r.error, std::strerror(ECONNREFUSED));
  EXPECT_EQ(r.status, 0);
}

TEST(HttpGet, NoAnswerIsATimeout) {
  Socket server;
  server.listen();  // the kernel completes the connection; nobody ever answers
  auto r = http_get("127.0.0.1", server.port(), "/", 200ms);
  EXPECT_EQ(r.outcome, ProbeOutcome::timeout);
  // Normally the connection and the request went through; a starved test thread may see the
  // deadline pass earlier, which is a timeout all the same.
  EXPECT_TRUE(r.error == "no answer in time" || r.error == "connect timed out" ||
              r.error == "send timed out")
      << r.error;
}

TEST(ProbeOutcomeText, EveryOutcomeHasAName) {
  EXPECT_EQ(to_string(ProbeOutcome::success), "success");
  EXPECT_EQ(to_string(ProbeOutcome::connection_error), "connection_error");
  EXPECT_EQ(to_string(ProbeOutcome::timeout), "timeout");
  EXPECT_EQ(to_string(ProbeOutcome::unknown_error), "unknown_error");
}

}  // namespace
}  // namespace gym::orchestrator
