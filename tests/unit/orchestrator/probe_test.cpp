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

// Accepts one connection on `server`, reads the request head, writes `reply`, then `forever`
// again and again until the client goes away (an endless body), and closes. With an empty
// `forever` the connection stays open, unanswered further, until the client closes it.
std::thread serve_open(const Socket& server, std::string reply, std::string forever = "") {
  return std::thread([fd = server.fd(), reply = std::move(reply), forever = std::move(forever)] {
    int conn = ::accept(fd, nullptr, nullptr);
    if (conn < 0) return;
    std::string request;
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      auto n = ::recv(conn, buf, sizeof buf, 0);
      if (n <= 0) break;
      request.append(buf, static_cast<std::size_t>(n));
    }
    auto send_all = [conn](const std::string& data) {
      for (std::size_t sent = 0; sent < data.size();) {
        auto n = ::send(conn, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return false;
        sent += static_cast<std::size_t>(n);
      }
      return true;
    };
    if (send_all(reply)) {
      if (forever.empty()) {
        while (::recv(conn, buf, sizeof buf, 0) > 0) {
        }
      } else {
        while (send_all(forever)) {
        }
      }
    }
    ::close(conn);
  });
}

TEST(HttpGet, AnAnswerOnAConnectionKeptOpenEndsAtItsLength) {
  // The server ignores `Connection: close`: the answer ends where its Content-Length says, not
  // at a close that never comes (before, the probe waited for it and timed out).
  Socket server;
  server.listen();
  auto thread = serve_open(server, "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"ok\":true}");
  auto r = http_get("127.0.0.1", server.port(), "/", 20s);
  thread.join();
  EXPECT_EQ(r.outcome, ProbeOutcome::success) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{\"ok\":true}");
  // Chunked likewise: the last chunk ends it.
  auto chunked = serve_open(server,
                            "HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: "
                            "chunked\r\n\r\n4\r\nbusy\r\n0\r\n\r\n");
  r = http_get("127.0.0.1", server.port(), "/", 20s);
  chunked.join();
  EXPECT_EQ(r.outcome, ProbeOutcome::success) << r.error;
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body, "busy");
}

TEST(HttpGet, InterimAnswersAreSkipped) {
  Socket server;
  server.listen();
  std::string request;
  auto thread =
      serve_once(server,
                 "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                 request);
  auto r = http_get("127.0.0.1", server.port(), "/", 10s);
  thread.join();
  EXPECT_EQ(r.outcome, ProbeOutcome::success) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok");
}

TEST(HttpGet, AnEndlessBodyFailsAtTheLimitWithoutFillingMemory) {
  // Before, the probe kept everything until its deadline: gigabytes from a local server.
  Socket server;
  server.listen();
  const std::string piece(64 * 1024, 'x');
  auto chunked = serve_open(server, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                            "10000\r\n" + piece + "\r\n");
  auto r = http_get("127.0.0.1", server.port(), "/v1/models", 30s, {}, 1u << 20);
  chunked.join();
  EXPECT_EQ(r.outcome, ProbeOutcome::unknown_error);
  EXPECT_EQ(r.error, "response body from http://127.0.0.1:" + std::to_string(server.port()) +
                         "/v1/models exceeded 1048576 bytes (the probe's limit)");
  EXPECT_TRUE(r.body.empty());
  // Without a length, until the close.
  auto to_close = serve_open(server, "HTTP/1.1 200 OK\r\n\r\n", piece);
  r = http_get("127.0.0.1", server.port(), "/", 30s);
  to_close.join();
  EXPECT_EQ(r.outcome, ProbeOutcome::unknown_error);
  EXPECT_NE(r.error.find("exceeded " + std::to_string(kMaxProbeBodyBytes) + " bytes"),
            std::string::npos)
      << r.error;
  // A Content-Length above the limit fails before any of the body is read.
  auto declared =
      serve_open(server, "HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n", piece);
  r = http_get("127.0.0.1", server.port(), "/", 30s);
  declared.join();
  EXPECT_NE(r.error.find("exceeded"), std::string::npos) << r.error;
  // A chunk-size line or a header line that never ends.
  auto chunk_line = serve_open(server, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                               std::string(piece.size(), 'f'));
  r = http_get("127.0.0.1", server.port(), "/", 30s);
  chunk_line.join();
  EXPECT_EQ(r.outcome, ProbeOutcome::unknown_error);
  EXPECT_NE(r.error.find("a chunk-size line or the trailers of the response from"),
            std::string::npos)
      << r.error;
  auto header = serve_open(server, "HTTP/1.1 200 OK\r\nX-Endless: ", piece);
  r = http_get("127.0.0.1", server.port(), "/", 30s);
  header.join();
  EXPECT_EQ(r.outcome, ProbeOutcome::unknown_error);
  EXPECT_NE(r.error.find("response header from"), std::string::npos) << r.error;
}

TEST(HttpGet, AStatusBelow100IsNoAnswer) {
  // Three digits as HTTP's grammar wants, but no status: taken as 0 it would read as "no response".
  Socket server;
  server.listen();
  std::string request;
  auto thread = serve_once(server, "HTTP/1.1 000 Zero\r\nContent-Length: 0\r\n\r\n", request);
  auto r = http_get("127.0.0.1", server.port(), "/", 10s);
  thread.join();
  EXPECT_EQ(r.outcome, ProbeOutcome::unknown_error);
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find("malformed response from http://127.0.0.1:"), std::string::npos)
      << r.error;
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
