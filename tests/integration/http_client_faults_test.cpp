// The HTTP client against servers that misbehave (issue 13, items 2, 4 and 6): a server that
// stops answering, one that accepts no connection, one that rejects a body while it is still
// being sent, and a request torn down mid-connect. Every case must end, none may leak.
#include "files.h"
#include "http/client.h"
#include "process.h"

#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <optional>
#include <thread>

namespace asio = boost::asio;
namespace json = boost::json;
using gym::http::ClientRequest;
using gym::http::ClientResponse;
using gym::http::HttpClient;
using gym::http::PoolParams;
using gym::test::ChildProcess;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<ChildProcess> start_server(std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{gym::test::build_path("tests/support/gym_test_server"), "--port",
                                "0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<ChildProcess>(argv);
}

std::string base_url(int port) { return "http://127.0.0.1:" + std::to_string(port); }

// One request on a fresh loop; its response, or the message of the RequestError it threw. The
// loop runs at most `limit`: a request still running then is a hang, reported as a failure.
struct Outcome {
  std::optional<ClientResponse> response;
  std::string error;
  bool finished = false;
  gym::http::ClientStats stats;
};
Outcome run_request(const PoolParams& params, ClientRequest req, std::chrono::seconds limit = 60s) {
  asio::io_context io;
  HttpClient client(io.get_executor(), params);
  Outcome out;
  asio::co_spawn(io, client.request(std::move(req)), [&](std::exception_ptr e, ClientResponse r) {
    out.finished = true;
    if (!e) {
      out.response = std::move(r);
    } else {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        out.error = ex.what();
      }
    }
    io.stop();
  });
  io.run_for(limit);
  out.stats = client.stats();
  return out;
}

ClientRequest post(const std::string& url, std::string body) {
  ClientRequest r;
  r.url = url;
  r.body = std::move(body);
  r.destination = "test_server";
  return r;
}

// A listening socket on 127.0.0.1 that accepts nothing (backlog 0): once its queue is full,
// the kernel drops further connection attempts, so a connect to it hangs.
struct SilentListener {
  int fd = -1;
  int port = 0;
  std::vector<int> queued;
  SilentListener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd, 0), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  // Fills the accept queue with connections of our own.
  void fill() {
    for (int i = 0; i < 4; ++i) {
      int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<std::uint16_t>(port));
      ::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a);
      queued.push_back(c);
    }
    std::this_thread::sleep_for(200ms);
  }
  ~SilentListener() {
    for (int c : queued) ::close(c);
    ::close(fd);
  }
};

}  // namespace

TEST(HttpClientFaults, StoppedServerFailsAfterTheReadTimeoutWithoutRetrying) {
  auto server = start_server();
  const int port = server->wait_port();
  ASSERT_GT(port, 0);
  server->signal(SIGSTOP);  // the kernel still accepts connections; nothing answers
  PoolParams params;
  params.read_timeout = 500ms;
  params.retry_budget_seconds = 300;
  auto out = run_request(params, post(base_url(port) + "/echo", R"({"a":1})"));
  server->signal(SIGCONT);
  ASSERT_TRUE(out.finished) << "the request to a stopped server hung";
  EXPECT_FALSE(out.response);
  EXPECT_NE(out.error.find("timed out"), std::string::npos) << out.error;
  EXPECT_NE(out.error.find("global_http_read_timeout_seconds"), std::string::npos) << out.error;
  EXPECT_NE(out.error.find(base_url(port) + "/echo"), std::string::npos) << out.error;
  EXPECT_EQ(out.stats.retries, 0u);
}

TEST(HttpClientFaults, ReadTimeoutIsPerByteNotPerResponse) {
  // A response that takes longer than the read timeout in total but whose server answers within
  // it is not cut off: the bound is on silence. Here the answer comes after 300 ms of a 2 s bound.
  auto server = start_server();
  const int port = server->wait_port();
  ASSERT_GT(port, 0);
  PoolParams params;
  params.read_timeout = 2s;
  auto out = run_request(params, post(base_url(port) + "/sleep", R"({"ms":300})"));
  ASSERT_TRUE(out.response) << out.error;
  EXPECT_EQ(out.response->status, 200);
  // And a server silent for longer than the bound fails.
  params.read_timeout = 200ms;
  auto slow = run_request(params, post(base_url(port) + "/sleep", R"({"ms":5000})"));
  ASSERT_TRUE(slow.finished);
  EXPECT_NE(slow.error.find("timed out"), std::string::npos) << slow.error;
}

TEST(HttpClientFaults, ConnectionThatIsNeverAcceptedFailsAfterTheConnectTimeout) {
  SilentListener listener;
  listener.fill();
  PoolParams params;
  params.connect_timeout = 300ms;
  ClientRequest req = post(base_url(listener.port) + "/x", "{}");
  req.retry = false;  // one attempt: the connect timeout alone decides
  auto out = run_request(params, req);
  ASSERT_TRUE(out.finished) << "a connect to a full accept queue hung";
  EXPECT_NE(out.error.find("cannot connect to 127.0.0.1:" + std::to_string(listener.port) +
                           ": timed out after 300 ms (global_http_connect_timeout_seconds)"),
            std::string::npos)
      << out.error;
}

TEST(HttpClientFaults, BodyRejectedWhileBeingSentGetsTheServersAnswerAtOnce) {
  // The server answers 413 as soon as it sees the Content-Length and closes while the client is
  // still writing 32 MiB: the client must read that answer, not retry a broken pipe.
  auto server = start_server({"--max-body", "1024"});
  const int port = server->wait_port();
  ASSERT_GT(port, 0);
  PoolParams params;
  params.retry_budget_seconds = 10;  // the old client spent it all retrying
  auto out = run_request(params,
                         post(base_url(port) + "/echo", "\"" + std::string(32u << 20, 'x') + "\""));
  ASSERT_TRUE(out.response) << out.error;
  EXPECT_EQ(out.response->status, 413);
  EXPECT_NE(out.response->body.find("Request body too large"), std::string::npos)
      << out.response->body;
  EXPECT_EQ(out.stats.retries, 0u);
}

TEST(HttpClientFaults, RequestTornDownMidConnectClosesItsSocket) {
  // An https request to a server that accepts and never answers the TLS handshake; the loop is
  // destroyed while the request waits in it (a server shutting down). Its connection must be
  // closed, which the server sees as the end of the stream; a leaked one stays open forever.
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t len = sizeof a;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);

  {
    auto io = std::make_unique<asio::io_context>();
    auto client = std::make_unique<HttpClient>(io->get_executor(), PoolParams{});
    ClientRequest req = post("https://127.0.0.1:" + std::to_string(port) + "/x", "{}");
    asio::co_spawn(*io, client->request(std::move(req)), asio::detached);
    for (int i = 0; i < 100 && client->open_connections() == 0; ++i) io->run_for(20ms);
    io->run_for(100ms);  // the connect done, the handshake under way
    ASSERT_EQ(client->open_connections(), 1u);
    client.reset();  // the pool lives on in the request's frame
    io.reset();      // destroys the frame mid-handshake
  }
  const int accepted = ::accept(listener, nullptr, nullptr);
  ASSERT_GE(accepted, 0);
  std::string seen = gym::test::read_until_close(accepted, 10'000ms);
  EXPECT_FALSE(seen.empty());  // the ClientHello
  pollfd p{accepted, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 0), 1) << "the client's socket is still open: its connection leaked";
  char byte = 0;
  EXPECT_EQ(::recv(accepted, &byte, 1, MSG_DONTWAIT), 0) << "no end of stream from the client";
  ::close(accepted);
  ::close(listener);
}

// ---- Bounded responses and protocol edges (gym_raw_http_server) ----

namespace {

std::unique_ptr<ChildProcess> raw_server(const std::string& mode) {
  return std::make_unique<ChildProcess>(std::vector<std::string>{
      gym::test::build_path("tests/support/gym_raw_http_server"), "--mode", mode});
}

// The peak resident memory of this process so far (VmHWM), in bytes.
std::uint64_t peak_rss_bytes() {
  const std::string status = gym::test::read_text("/proc/self/status");
  const auto at = status.find("VmHWM:");
  return at == std::string::npos ? 0 : std::stoull(status.substr(at + 6)) * 1024;
}

// An external call (retried the most) with a 1 MiB bound and a whole-attempt timeout, so even a
// client without a bound ends the attempt instead of reading for ever.
ClientRequest bounded_call(int port) {
  ClientRequest req = post(base_url(port) + "/v1/chat/completions?api-version=1", "{}");
  req.kind = gym::http::CallKind::external;
  req.max_response_bytes = 1u << 20;
  req.max_response_setting = "model_response_max_bytes";
  req.timeout = 5s;
  return req;
}

}  // namespace

TEST(HttpClientBounds, AnEndlessBodyFailsAtTheLimitAtOnceWithoutRetrying) {
  for (const std::string mode : {"endless-chunked", "endless-length", "endless-close"}) {
    SCOPED_TRACE(mode);
    auto server = raw_server(mode);
    const int port = server->wait_port();
    ASSERT_GT(port, 0);
    PoolParams params;
    params.retry_budget_seconds = 60;
    auto out = run_request(params, bounded_call(port), 30s);
    ASSERT_TRUE(out.finished) << "the endless answer was read for ever";
    EXPECT_FALSE(out.response);
    // Named with the URL (without its query) and the setting; not a timeout, not retried.
    EXPECT_EQ(out.error, "response body from " + base_url(port) +
                             "/v1/chat/completions exceeded 1048576 bytes "
                             "(model_response_max_bytes)");
    EXPECT_EQ(out.stats.retries, 0u);
    EXPECT_EQ(out.stats.acquisitions, 1u);
  }
  // Three endless answers cost this process a few MB, not what 5 s of reading would (GBs).
  EXPECT_LT(peak_rss_bytes(), 300ull << 20);
}

TEST(HttpClientBounds, TheDefaultLimitAppliesToEveryRequestAndThrowsResponseTooLarge) {
  auto server = raw_server("endless-length");  // Content-Length: 10^12
  const int port = server->wait_port();
  ASSERT_GT(port, 0);
  asio::io_context io;
  HttpClient client(io.get_executor(), PoolParams{});
  bool too_large = false;
  std::string error;
  asio::co_spawn(io, client.request(post(base_url(port) + "/x", "{}")),
                 [&](std::exception_ptr e, ClientResponse) {
                   io.stop();
                   try {
                     if (e) std::rethrow_exception(e);
                   } catch (const gym::http::ResponseTooLargeError& ex) {
                     too_large = true;
                     error = ex.what();
                   } catch (const std::exception& ex) {
                     error = ex.what();
                   }
                 });
  io.run_for(30s);
  EXPECT_TRUE(too_large) << error;
  EXPECT_EQ(error, "response body from " + base_url(port) + "/x exceeded " +
                       std::to_string(gym::http::kDefaultMaxResponseBytes) +
                       " bytes (the HTTP client's limit for this request)");
}

TEST(HttpClientBounds, EndlessHeaderAndChunkSizeLinesAreBounded) {
  auto header = raw_server("endless-header");
  const int header_port = header->wait_port();
  ASSERT_GT(header_port, 0);
  auto out = run_request(PoolParams{}, bounded_call(header_port), 30s);
  ASSERT_TRUE(out.finished);
  EXPECT_EQ(out.error, "response header from " + base_url(header_port) +
                           "/v1/chat/completions exceeded 1048576 bytes");
  EXPECT_EQ(out.stats.retries, 0u);

  auto chunk_line = raw_server("endless-chunk-line");
  const int chunk_port = chunk_line->wait_port();
  ASSERT_GT(chunk_port, 0);
  out = run_request(PoolParams{}, bounded_call(chunk_port), 30s);
  ASSERT_TRUE(out.finished);
  EXPECT_EQ(out.error, "a chunk-size line or the trailers of the response from " +
                           base_url(chunk_port) + "/v1/chat/completions exceeded 1048576 bytes");
  EXPECT_EQ(out.stats.retries, 0u);
  EXPECT_LT(peak_rss_bytes(), 300ull << 20);
}

TEST(HttpClientProtocol, InterimAnswersAreSkippedForTheFinalOne) {
  // "100 Continue" and "103 Early Hints" before the 200: before, the 100 was taken as the answer.
  auto server = raw_server("continue");
  const int port = server->wait_port();
  ASSERT_GT(port, 0);
  asio::io_context io;
  HttpClient client(io.get_executor(), PoolParams{});
  std::vector<int> statuses;
  std::string body;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        // Twice on one connection: the bytes after the first answer are not left behind.
        for (int i = 0; i < 2; ++i) {
          auto r = co_await client.request(post(base_url(port) + "/x", "{}"));
          statuses.push_back(r.status);
          body = r.body;
        }
      },
      [&](std::exception_ptr e) {
        io.stop();
        try {
          if (e) std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          body = ex.what();
        }
      });
  io.run_for(30s);
  EXPECT_EQ(statuses, (std::vector<int>{200, 200})) << body;
  EXPECT_EQ(body, "{\"ok\":true}");
  EXPECT_EQ(client.stats().connections_opened, 1u);
  EXPECT_EQ(client.stats().connections_reused, 1u);
}

TEST(PoolParams, TimeoutKeysHaveDocumentedDefaultsAndZeroMeansNone) {
  const auto d = PoolParams::from_config(boost::json::object{}, 1);
  EXPECT_EQ(d.connect_timeout, 30s);
  EXPECT_EQ(d.read_timeout, 3600s);
  const auto p = PoolParams::from_config(json::parse(R"({"global_http_connect_timeout_seconds": 0.5,
                                                         "global_http_read_timeout_seconds": 0})")
                                             .as_object(),
                                         1);
  EXPECT_EQ(p.connect_timeout, 500ms);
  EXPECT_EQ(p.read_timeout, 0ms);
  EXPECT_THROW(PoolParams::from_config(
                   json::parse(R"({"global_http_read_timeout_seconds": -1})").as_object(), 1),
               std::exception);
}
