// The readiness and status probe (docs/design/processes.md#readiness): orchestrator/probe.h's
// http_get against a loopback socket the test owns (OS-chosen port).
#include "orchestrator/probe.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ostream>
#include <string>
#include <thread>

#include "orchestrator_test_support.h"

namespace gym::orchestrator {
namespace {

using namespace std::chrono_literals;
using testing::Socket;

// What the test's server does once it has written its reply.
enum class Then {
  close,             // closes the connection
  wait_for_client,   // keeps it open, unanswered further, until the client closes it
  repeat_endlessly,  // writes `forever` again and again until the client goes away (an endless
                     // body or line), then closes
};

// One GET against a server that answers one connection as scripted, and what the probe makes of
// it. "{port}" in `request` and `error` stands for the server's port.
struct Exchange {
  const char* name;
  std::string reply;  // what the server writes after reading the request head
  Then then = Then::close;
  std::string forever = "";
  std::string path = "/";
  ProbeHeaders headers = {};
  std::size_t max_body_bytes = kMaxProbeBodyBytes;
  std::chrono::milliseconds timeout = 10s;
  ProbeOutcome outcome = ProbeOutcome::success;
  int status = 0;
  std::string body = "";
  std::string error = "";      // the probe's error: all of it,
  bool error_is_part = false;  // or a part of it
  std::string request = "";    // the request head the server read, all of it; not checked when ""

  friend void PrintTo(const Exchange& e, std::ostream* os) { *os << e.name; }
};

std::string with_port(std::string text, int port) {
  for (auto at = text.find("{port}"); at != std::string::npos; at = text.find("{port}", at))
    text.replace(at, 6, std::to_string(port));
  return text;
}

// Accepts one connection on the listening `server`, reads the request head into `request`,
// writes the exchange's reply and goes on as it says.
std::thread serve(const Socket& server, const Exchange& e, std::string& request) {
  return std::thread([fd = server.fd(), &e, &request] {
    int conn = ::accept(fd, nullptr, nullptr);
    if (conn < 0) return;
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
    if (send_all(e.reply) && e.then == Then::wait_for_client) {
      while (::recv(conn, buf, sizeof buf, 0) > 0) {
      }
    } else if (e.then == Then::repeat_endlessly) {
      while (send_all(e.forever)) {
      }
    }
    ::close(conn);
  });
}

class HttpGetScripted : public ::testing::TestWithParam<Exchange> {};

TEST_P(HttpGetScripted, Case) {
  const Exchange& e = GetParam();
  Socket server;
  server.listen();
  std::string request;
  auto thread = serve(server, e, request);
  auto r = http_get("127.0.0.1", server.port(), e.path, e.timeout, e.headers, e.max_body_bytes);
  thread.join();
  EXPECT_EQ(r.outcome, e.outcome) << r.error;
  EXPECT_EQ(r.status, e.status);
  EXPECT_EQ(r.body, e.body);
  const std::string error = with_port(e.error, server.port());
  if (e.error_is_part) {
    EXPECT_NE(r.error.find(error), std::string::npos) << r.error;
  } else {
    EXPECT_EQ(r.error, error);
  }
  if (!e.request.empty()) {
    EXPECT_EQ(request, with_port(e.request, server.port()));
  }
}

const std::string kPiece(64 * 1024, 'x');

const Exchange kExchanges[] = {
    {.name = "AnswerStatusAndBody",
     .reply = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"status\":\"ok\"}",
     .status = 200,
     .body = "{\"status\":\"ok\"}",
     .request = "GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"},
    {.name = "SendsTheGivenHeaders",
     .reply = "HTTP/1.1 401 Unauthorized\r\n\r\n",
     .path = "/v1/models",
     .headers = {{"X-Team", "rl"}, {"Authorization", "Bearer k"}},
     .status = 401,
     .request = "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Team: rl\r\n"
                "Authorization: Bearer k\r\nConnection: close\r\n\r\n"},
    {.name = "AnyStatusIsAnAnswer",
     .reply = "HTTP/1.0 503 Service Unavailable\r\n\r\nbusy",
     .path = "/server_instances",
     .status = 503,
     .body = "busy",
     .request = "GET /server_instances HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: "
                "close\r\n\r\n"},
    {.name = "ChunkedBodyIsDecoded",
     .reply = "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n"
              "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
     .status = 200,
     .body = "hello world"},
    {.name = "SomethingElseThanHttpIsAnUnknownError",
     .reply = "SSH-2.0-OpenSSH_9.0\r\n\r\n",
     .outcome = ProbeOutcome::unknown_error,
     .error = "not an HTTP answer"},
    {.name = "ClosingWithoutAnswerIsAnUnknownError",
     .reply = "",
     .outcome = ProbeOutcome::unknown_error,
     .error = "not an HTTP answer"},
    // The server ignores `Connection: close`: the answer ends where its Content-Length says, not
    // at a close that never comes (before, the probe waited for it and timed out).
    {.name = "AnAnswerOnAConnectionKeptOpenEndsAtItsLength",
     .reply = "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"ok\":true}",
     .then = Then::wait_for_client,
     .timeout = 20s,
     .status = 200,
     .body = "{\"ok\":true}"},
    // Chunked likewise: the last chunk ends it.
    {.name = "AChunkedAnswerOnAConnectionKeptOpenEndsAtTheLastChunk",
     .reply = "HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n"
              "4\r\nbusy\r\n0\r\n\r\n",
     .then = Then::wait_for_client,
     .timeout = 20s,
     .status = 503,
     .body = "busy"},
    {.name = "InterimAnswersAreSkipped",
     .reply = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
              "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
     .status = 200,
     .body = "ok"},
    // Endless answers fail at the limit without filling memory; before, the probe kept everything
    // until its deadline: gigabytes from a local server.
    {.name = "AnEndlessChunkedBodyFailsAtTheLimit",
     .reply = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
     .then = Then::repeat_endlessly,
     .forever = "10000\r\n" + kPiece + "\r\n",
     .path = "/v1/models",
     .max_body_bytes = 1u << 20,
     .timeout = 30s,
     .outcome = ProbeOutcome::unknown_error,
     .error = "response body from http://127.0.0.1:{port}/v1/models exceeded 1048576 bytes (the "
              "probe's limit)"},
    // Without a length, until the close.
    {.name = "AnEndlessBodyUntilTheCloseFailsAtTheDefaultLimit",
     .reply = "HTTP/1.1 200 OK\r\n\r\n",
     .then = Then::repeat_endlessly,
     .forever = kPiece,
     .timeout = 30s,
     .outcome = ProbeOutcome::unknown_error,
     .error = "exceeded " + std::to_string(kMaxProbeBodyBytes) + " bytes",
     .error_is_part = true},
    // A Content-Length above the limit fails before any of the body is read.
    {.name = "AContentLengthAboveTheLimitFails",
     .reply = "HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n",
     .then = Then::repeat_endlessly,
     .forever = kPiece,
     .timeout = 30s,
     .outcome = ProbeOutcome::unknown_error,
     .error = "exceeded",
     .error_is_part = true},
    // A chunk-size line or a header line that never ends.
    {.name = "AnEndlessChunkSizeLineFails",
     .reply = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
     .then = Then::repeat_endlessly,
     .forever = std::string(kPiece.size(), 'f'),
     .timeout = 30s,
     .outcome = ProbeOutcome::unknown_error,
     .error = "a chunk-size line or the trailers of the response from",
     .error_is_part = true},
    {.name = "AnEndlessHeaderLineFails",
     .reply = "HTTP/1.1 200 OK\r\nX-Endless: ",
     .then = Then::repeat_endlessly,
     .forever = kPiece,
     .timeout = 30s,
     .outcome = ProbeOutcome::unknown_error,
     .error = "response header from",
     .error_is_part = true},
    // Three digits as HTTP's grammar wants, but no status: taken as 0 it would read as "no
    // response".
    {.name = "AStatusBelow100IsNoAnswer",
     .reply = "HTTP/1.1 000 Zero\r\nContent-Length: 0\r\n\r\n",
     .outcome = ProbeOutcome::unknown_error,
     .error = "malformed response from http://127.0.0.1:",
     .error_is_part = true},
};

INSTANTIATE_TEST_SUITE_P(Table, HttpGetScripted, ::testing::ValuesIn(kExchanges),
                         [](const auto& info) { return std::string(info.param.name); });

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
