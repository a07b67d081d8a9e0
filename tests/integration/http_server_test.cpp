// Integration tests of the HTTP server (docs/reference/http-server.md): every test starts the real
// test server binary (tests/support/test_server.cpp) on 127.0.0.1 with an OS-chosen port and talks
// HTTP over real sockets. Timeouts here are hang guards only; no test asserts how long something
// took.
#include "http/session_cookie.h"
#include "process.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using gym::test::body_of;
using gym::test::build_path;
using gym::test::ChildProcess;
using gym::test::connect_tcp;
using gym::test::header_of;
using gym::test::http_raw;
using gym::test::post;
using gym::test::send_all;
using gym::test::status_of;

constexpr const char* kCookieName = "SimpleWeatherResourcesServer___example_single_tool_call";

std::string server_binary() { return build_path("tests/support/gym_test_server"); }

// A started test server: `--port 0` plus `flags`; `port` is -1 if it never announced itself.
struct Server {
  explicit Server(std::vector<std::string> flags = {}, std::vector<std::string> env = {})
      : proc(argv(std::move(flags)), std::move(env)) {
    port = proc.wait_port();
  }
  static std::vector<std::string> argv(std::vector<std::string> flags) {
    std::vector<std::string> a{server_binary(), "--port", "0"};
    a.insert(a.end(), flags.begin(), flags.end());
    return a;
  }
  ChildProcess proc;
  int port = -1;
};

std::string get(const std::string& path, const std::string& extra_headers = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers + "\r\n";
}

json::value parse(const std::string& text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  EXPECT_FALSE(ec) << "not JSON: " << text;
  return v;
}

// What arrived before the peer closed; `closed` is false when the guard ran out first.
struct Drained {
  std::string data;
  bool closed = false;
};

// One client connection with a read buffer, so pipelined responses are not lost.
class Conn {
 public:
  explicit Conn(int port) : fd_(connect_tcp(port)) {}
  ~Conn() {
    if (fd_ >= 0) ::close(fd_);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void send(std::string_view data) { send_all(fd_, data); }

  // One response (head plus Content-Length body), or "" when the peer closed or the guard passed.
  std::string response(std::chrono::milliseconds guard = 15s) {
    auto deadline = Clock::now() + guard;
    for (;;) {
      if (auto end = buf_.find("\r\n\r\n"); end != std::string::npos) {
        auto cl = header_of(buf_.substr(0, end + 4), "content-length");
        std::size_t need = end + 4 + (cl.empty() ? 0 : std::stoull(cl));
        if (buf_.size() >= need) {
          std::string r = buf_.substr(0, need);
          buf_.erase(0, need);
          return r;
        }
      }
      if (!fill(deadline)) return "";
    }
  }

  // Reads until the peer closes (FIN or reset) or the guard passes.
  Drained until_close(std::chrono::milliseconds guard = 20s) {
    auto deadline = Clock::now() + guard;
    Drained d;
    for (;;) {
      auto r = recv_some(deadline);
      if (r == Recv::closed) {
        d.closed = true;
        break;
      }
      if (r == Recv::timeout) break;
    }
    d.data = std::move(buf_);
    buf_.clear();
    return d;
  }

  // Wakes a thread blocked in send() on this socket.
  void shutdown_both() {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
  }

 private:
  enum class Recv { data, closed, timeout };

  Recv recv_some(Clock::time_point deadline) {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return Recv::timeout;
      pollfd p{fd_, POLLIN, 0};
      int pr = ::poll(&p, 1, static_cast<int>(left.count()));
      if (pr < 0 && errno == EINTR) continue;
      if (pr <= 0) return Recv::timeout;
      char buf[65536];
      auto n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Recv::closed;  // 0: FIN; < 0: ECONNRESET and friends
      buf_.append(buf, static_cast<std::size_t>(n));
      return Recv::data;
    }
  }
  bool fill(Clock::time_point deadline) { return recv_some(deadline) == Recv::data; }

  int fd_;
  std::string buf_;
};

// A thread that streams bytes into a socket until told to stop or the socket fails.
class Streamer {
 public:
  // `chunk(i)` returns the i-th piece to send, or nullopt when done.
  Streamer(int fd, std::function<std::optional<std::string>(std::size_t)> chunk,
           std::chrono::milliseconds pause = 0ms)
      : thread_([this, fd, chunk = std::move(chunk), pause] {
          for (std::size_t i = 0;; ++i) {
            if (pause.count() > 0 && i > 0) {
              std::unique_lock lock(mu_);
              if (cv_.wait_for(lock, pause, [this] { return stop_; })) break;
            } else if (stopped()) {
              break;
            }
            auto piece = chunk(i);
            if (!piece) break;
            std::string_view rest = *piece;
            while (!rest.empty()) {
              auto n = ::send(fd, rest.data(), rest.size(), MSG_NOSIGNAL);
              if (n < 0 && errno == EINTR) continue;
              if (n <= 0) {
                failed_ = true;
                return;
              }
              sent_ += static_cast<std::size_t>(n);
              rest.remove_prefix(static_cast<std::size_t>(n));
            }
          }
        }) {}
  ~Streamer() { stop(); }

  void stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  std::size_t sent() const { return sent_.load(); }
  bool failed() const { return failed_.load(); }

 private:
  bool stopped() {
    std::lock_guard lock(mu_);
    return stop_;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<std::size_t> sent_{0};
  std::atomic<bool> failed_{false};
  std::thread thread_;  // last: starts after the members above exist
};

// The parent pid of `pid` from /proc/<pid>/stat, -1 if it is gone.
pid_t parent_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto close_paren = stat.rfind(')');  // the command name may contain spaces
  if (close_paren == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close_paren + 1));
  char state = 0;
  pid_t ppid = -1;
  rest >> state >> ppid;
  return ppid;
}

bool process_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

// GET /stats over a fresh connection; null on failure.
json::value stats(int port) {
  auto r = http_raw(port, get("/stats"));
  if (status_of(r) != 200) return nullptr;
  return parse(body_of(r));
}

using gym::http::base64url_decode;  // the decoder itself is unit-tested

const std::regex kUuid4("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");

// ---------------------------------------------------------------------------------------------
// 1-3: basic routes, 404/405, malformed JSON

TEST(HttpServer, RootAnswersStatusOk) {
  Server s;
  ASSERT_GT(s.port, 0);
  auto r = http_raw(s.port, get("/"));
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), R"({"status":"ok"})");
  EXPECT_EQ(header_of(r, "Content-Type"), "application/json");
  EXPECT_EQ(header_of(r, "Content-Length"), "15");
}

TEST(HttpServer, UnknownPathIs404AndWrongMethodIs405) {
  Server s;
  ASSERT_GT(s.port, 0);
  auto r = http_raw(s.port, get("/no/such/path"));
  EXPECT_EQ(status_of(r), 404);
  EXPECT_EQ(body_of(r), R"({"detail":"Not Found"})");
  EXPECT_EQ(header_of(r, "Content-Type"), "application/json");

  r = http_raw(s.port, post("/no/such", "{}"));
  EXPECT_EQ(status_of(r), 404);
  EXPECT_EQ(body_of(r), R"({"detail":"Not Found"})");

  r = http_raw(s.port, get("/echo"));
  EXPECT_EQ(status_of(r), 405);
  EXPECT_EQ(body_of(r), R"({"detail":"Method Not Allowed"})");
  EXPECT_EQ(header_of(r, "Content-Type"), "application/json");

  r = http_raw(s.port, post("/", "{}"));  // "/" is GET only
  EXPECT_EQ(status_of(r), 405);
  EXPECT_EQ(body_of(r), R"({"detail":"Method Not Allowed"})");
}

TEST(HttpServer, MalformedJsonIs400AndConnectionStaysUsable) {
  Server s;
  ASSERT_GT(s.port, 0);
  Conn c(s.port);
  ASSERT_TRUE(c.ok());
  c.send(post("/echo", R"({"a": )"));
  auto r = c.response();
  EXPECT_EQ(status_of(r), 400);
  const std::string prefix = R"({"detail":"Malformed JSON body: )";
  auto body = body_of(r);
  EXPECT_EQ(body.substr(0, prefix.size()), prefix) << body;
  EXPECT_EQ(body.substr(body.size() - 2), "\"}") << body;
  EXPECT_GT(body.size(), prefix.size() + 2) << "the parser message is missing: " << body;
  EXPECT_NE(header_of(r, "Connection"), "close");

  // Same connection: the next request is served.
  c.send(post("/echo", R"({"a":[1,2.5,"é"]})"));
  r = c.response();
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), R"({"a":[1,2.5,"é"]})");

  c.send(post("/echo", "not json at all"));
  r = c.response();
  EXPECT_EQ(status_of(r), 400);
  EXPECT_EQ(body_of(r).substr(0, prefix.size()), prefix);
  // Deep nesting is rejected by the parser, not by the stack.
  c.send(post("/echo", std::string(100000, '[') + std::string(100000, ']')));
  r = c.response();
  EXPECT_EQ(status_of(r), 400);
  EXPECT_EQ(body_of(r).substr(0, prefix.size()), prefix);
  c.send(get("/"));
  EXPECT_EQ(status_of(c.response()), 200);
}

// ---------------------------------------------------------------------------------------------
// 4: 422 validation with upstream's lax coercions

TEST(HttpServer, MissingFieldsAre422WithEnclosingObjectAsInput) {
  Server s;
  ASSERT_GT(s.port, 0);
  auto r = http_raw(s.port, post("/typed", R"({"note":"n"})"));
  ASSERT_EQ(status_of(r), 422);
  EXPECT_EQ(header_of(r, "Content-Type"), "application/json");
  // Exact rendering: pydantic's key order, compact separators.
  EXPECT_EQ(
      body_of(r),
      R"({"detail":[{"type":"missing","loc":["body","city"],"msg":"Field required","input":{"note":"n"}},)"
      R"({"type":"missing","loc":["body","count"],"msg":"Field required","input":{"note":"n"}}]})");

  r = http_raw(s.port, post("/typed", "{}"));
  ASSERT_EQ(status_of(r), 422);
  auto detail = parse(body_of(r)).at("detail").as_array();
  ASSERT_EQ(detail.size(), 2u);
  EXPECT_EQ(detail[0].at("type"), "missing");
  EXPECT_EQ(detail[0].at("msg"), "Field required");
  EXPECT_EQ(detail[0].at("loc"), (json::array{"body", "city"}));
  EXPECT_EQ(detail[0].at("input"), json::object{});
  EXPECT_EQ(detail[1].at("loc"), (json::array{"body", "count"}));
}

TEST(HttpServer, WrongTypesAre422WithUpstreamTypesAndMessages) {
  Server s;
  ASSERT_GT(s.port, 0);
  auto r = http_raw(
      s.port, post("/typed", R"({"city":5,"count":"abc","flag":"maybe","mode":"c","tags":"x"})"));
  ASSERT_EQ(status_of(r), 422);
  auto detail = parse(body_of(r)).at("detail");
  auto expected = parse(R"([
    {"type":"string_type","loc":["body","city"],"msg":"Input should be a valid string","input":5},
    {"type":"int_parsing","loc":["body","count"],
     "msg":"Input should be a valid integer, unable to parse string as an integer","input":"abc"},
    {"type":"bool_parsing","loc":["body","flag"],
     "msg":"Input should be a valid boolean, unable to interpret input","input":"maybe"},
    {"type":"literal_error","loc":["body","mode"],"msg":"Input should be 'a' or 'b'","input":"c",
     "ctx":{"expected":"'a' or 'b'"}},
    {"type":"list_type","loc":["body","tags"],"msg":"Input should be a valid list","input":"x"}
  ])");
  EXPECT_EQ(detail, expected) << body_of(r);
  // ctx comes after input, as upstream renders it.
  EXPECT_NE(
      body_of(r).find(
          R"({"type":"literal_error","loc":["body","mode"],"msg":"Input should be 'a' or 'b'","input":"c","ctx":{"expected":"'a' or 'b'"}})"),
      std::string::npos)
      << body_of(r);

  r = http_raw(s.port, post("/typed", R"({"city":"x","count":5.5})"));
  ASSERT_EQ(status_of(r), 422);
  EXPECT_EQ(
      body_of(r),
      R"({"detail":[{"type":"int_from_float","loc":["body","count"],)"
      R"("msg":"Input should be a valid integer, got a number with a fractional part","input":5.5}]})");

  r = http_raw(s.port, post("/typed", R"({"city":"x","count":1,"tags":["a",3,"c"]})"));
  ASSERT_EQ(status_of(r), 422);
  EXPECT_EQ(body_of(r), R"({"detail":[{"type":"string_type","loc":["body","tags",1],)"
                        R"("msg":"Input should be a valid string","input":3}]})");

  // null only for optional (nullable) fields
  r = http_raw(s.port, post("/typed", R"({"city":null,"count":1})"));
  ASSERT_EQ(status_of(r), 422);
  EXPECT_EQ(body_of(r), R"({"detail":[{"type":"string_type","loc":["body","city"],)"
                        R"("msg":"Input should be a valid string","input":null}]})");

  r = http_raw(s.port, post("/typed", R"({"city":"x","count":[1]})"));
  ASSERT_EQ(status_of(r), 422);
  detail = parse(body_of(r)).at("detail");
  ASSERT_EQ(detail.as_array().size(), 1u);
  EXPECT_EQ(detail.at(0).at("type"), "int_type");
  EXPECT_EQ(detail.at(0).at("msg"), "Input should be a valid integer");
  EXPECT_EQ(detail.at(0).at("input"), (json::array{1}));

  r = http_raw(s.port, post("/typed", R"({"city":"x","count":1,"ratio":"fast"})"));
  ASSERT_EQ(status_of(r), 422);
  detail = parse(body_of(r)).at("detail");
  EXPECT_EQ(detail.at(0).at("type"), "float_parsing");
  EXPECT_EQ(detail.at(0).at("loc"), (json::array{"body", "ratio"}));
  EXPECT_EQ(detail.at(0).at("msg"),
            "Input should be a valid number, unable to parse string as a number");

  // A body that is not an object at all
  r = http_raw(s.port, post("/typed", "[1,2]"));
  ASSERT_EQ(status_of(r), 422);
  detail = parse(body_of(r)).at("detail");
  EXPECT_EQ(detail.at(0).at("loc"), (json::array{"body"}));
  EXPECT_EQ(detail.at(0).at("input"), (json::array{1, 2}));

  // No body at all for a route that requires one
  r = http_raw(s.port, post("/typed", ""));
  ASSERT_EQ(status_of(r), 422);
  EXPECT_EQ(
      body_of(r),
      R"({"detail":[{"type":"missing","loc":["body"],"msg":"Field required","input":null}]})");
}

TEST(HttpServer, LaxCoercionsAreAppliedBeforeTheHandler) {
  Server s;
  ASSERT_GT(s.port, 0);
  // The /typed handler echoes the validated (coerced) body.
  auto r = http_raw(
      s.port,
      post("/typed", R"({"city":"Paris","count":"5","flag":"yes","ratio":"1.5","note":null})"));
  ASSERT_EQ(status_of(r), 200) << body_of(r);
  EXPECT_EQ(body_of(r), R"({"city":"Paris","count":5,"flag":true,"ratio":1.5,"note":null})");
  auto v = parse(body_of(r));
  EXPECT_TRUE(v.at("count").is_int64());
  EXPECT_TRUE(v.at("flag").is_bool());
  EXPECT_TRUE(v.at("ratio").is_double());
  EXPECT_TRUE(v.at("note").is_null());

  r = http_raw(s.port,
               post("/typed", R"({"city":"x","count":5.0,"flag":"OFF","mode":"b","tags":["t"]})"));
  ASSERT_EQ(status_of(r), 200) << body_of(r);
  EXPECT_EQ(body_of(r), R"({"city":"x","count":5,"flag":false,"mode":"b","tags":["t"]})");

  r = http_raw(s.port, post("/typed", R"({"city":"x","count":true,"flag":1,"ratio":2})"));
  ASSERT_EQ(status_of(r), 200) << body_of(r);
  EXPECT_EQ(body_of(r), R"({"city":"x","count":1,"flag":true,"ratio":2})");

  // Unknown fields are ignored (and echoed) where extra keys are not forbidden.
  r = http_raw(s.port, post("/typed", R"({"city":"x","count":1,"unknown":[1]})"));
  ASSERT_EQ(status_of(r), 200) << body_of(r);
  EXPECT_EQ(body_of(r), R"({"city":"x","count":1,"unknown":[1]})");
}

TEST(HttpServer, ForbiddenExtraFieldIs422) {
  Server s;
  ASSERT_GT(s.port, 0);
  auto r = http_raw(s.port, post("/strict", R"({"input":1,"extra":{"k":2}})"));
  ASSERT_EQ(status_of(r), 422);
  EXPECT_EQ(body_of(r), R"({"detail":[{"type":"extra_forbidden","loc":["body","extra"],)"
                        R"("msg":"Extra inputs are not permitted","input":{"k":2}}]})");
  r = http_raw(s.port, post("/strict", R"({"input":1})"));
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), "{}");
}

// ---------------------------------------------------------------------------------------------
// 5: handler exceptions

TEST(HttpServer, HandlerExceptionIs500JsonStringAndServerSurvives) {
  Server s;
  ASSERT_GT(s.port, 0);
  Conn c(s.port);
  ASSERT_TRUE(c.ok());
  c.send(post("/throw", "{}"));
  auto r = c.response();
  EXPECT_EQ(status_of(r), 500);
  EXPECT_EQ(body_of(r), R"("runtime_error: boom")");
  EXPECT_EQ(header_of(r, "Content-Type"), "application/json");
  // The same connection and a fresh one are both served.
  c.send(post("/echo", R"({"after":"throw"})"));
  r = c.response();
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), R"({"after":"throw"})");
  r = http_raw(s.port, get("/"));
  EXPECT_EQ(status_of(r), 200);
  EXPECT_TRUE(s.proc.running());
}

// ---------------------------------------------------------------------------------------------
// 6: body limit (413, then close)

constexpr std::size_t k100MiB = 100u << 20;

TEST(HttpServer, ContentLengthOverLimitIs413BeforeTheBodyIsRead) {
  Server s({"--max-body", "1048576"});
  ASSERT_GT(s.port, 0);
  Conn c(s.port);
  ASSERT_TRUE(c.ok());
  c.send(
      "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(k100MiB) + "\r\n\r\n");
  const std::string piece(64 << 10, 'a');
  std::size_t total = 0;
  Streamer body(c.fd(), [&](std::size_t) -> std::optional<std::string> {
    if (total >= k100MiB) return std::nullopt;
    total += piece.size();
    return piece;
  });
  auto d = c.until_close(60s);
  EXPECT_TRUE(d.closed) << "the server did not close the connection";
  c.shutdown_both();
  body.stop();
  EXPECT_EQ(status_of(d.data), 413) << d.data.substr(0, 200);
  EXPECT_EQ(body_of(d.data), R"j({"detail":"Request body too large (limit 1048576 bytes)"})j");
  EXPECT_EQ(header_of(d.data, "Connection"), "close");
  EXPECT_LT(body.sent(), k100MiB) << "the server read the whole body";
  // The server is fine afterwards.
  EXPECT_EQ(status_of(http_raw(s.port, get("/"))), 200);
}

TEST(HttpServer, ChunkedBodyOverLimitIs413) {
  Server s({"--max-body", "1048576"});
  ASSERT_GT(s.port, 0);
  Conn c(s.port);
  ASSERT_TRUE(c.ok());
  c.send(
      "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n");
  const std::string chunk = "10000\r\n" + std::string(0x10000, ' ') + "\r\n";  // 64 KiB each
  constexpr std::size_t kChunks = 1600;                                        // 100 MiB
  Streamer body(c.fd(), [&](std::size_t i) -> std::optional<std::string> {
    if (i < kChunks) return chunk;
    if (i == kChunks) return std::string("0\r\n\r\n");
    return std::nullopt;
  });
  auto d = c.until_close(60s);
  EXPECT_TRUE(d.closed) << "the server did not close the connection";
  c.shutdown_both();
  body.stop();
  EXPECT_EQ(status_of(d.data), 413) << d.data.substr(0, 200);
  EXPECT_EQ(body_of(d.data), R"j({"detail":"Request body too large (limit 1048576 bytes)"})j");
  EXPECT_LT(body.sent(), kChunks * chunk.size()) << "the server read the whole body";
  EXPECT_EQ(status_of(http_raw(s.port, get("/"))), 200);
}

TEST(HttpServer, ChunkedBodyUnderLimitIsServed) {
  Server s({"--max-body", "1048576"});
  ASSERT_GT(s.port, 0);
  Conn c(s.port);
  ASSERT_TRUE(c.ok());
  c.send(
      "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n3\r\n[1]\r\n1\r\n}\r\n0\r\n\r\n");
  auto r = c.response();
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), R"({"a":[1]})");
}

TEST(HttpServer, HundredMiBBodyIs413ThenCloseWithDefaultLimit) {
  Server s;  // default http_max_request_body_bytes: 64 MiB
  ASSERT_GT(s.port, 0);
  Conn c(s.port);
  ASSERT_TRUE(c.ok());
  // One real 100 MiB request: head and body, streamed as fast as the socket takes it.
  const std::string piece(1 << 20, 'x');
  const std::string head =
      "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(k100MiB) + "\r\n\r\n";
  Streamer body(c.fd(), [&](std::size_t i) -> std::optional<std::string> {
    if (i == 0) return head;
    if (i <= 100) return piece;
    return std::nullopt;
  });
  auto d = c.until_close(60s);
  EXPECT_TRUE(d.closed) << "the server did not close the connection";
  c.shutdown_both();
  body.stop();
  EXPECT_EQ(status_of(d.data), 413) << d.data.substr(0, 200);
  EXPECT_EQ(body_of(d.data), R"j({"detail":"Request body too large (limit 67108864 bytes)"})j");
  EXPECT_LT(body.sent(), head.size() + k100MiB) << "the server read the whole body";
  EXPECT_TRUE(s.proc.running());
  EXPECT_EQ(status_of(http_raw(s.port, get("/"))), 200);
}

TEST(HttpServer, BodyAtTheLimitIsAccepted) {
  Server s({"--max-body", "1024"});
  ASSERT_GT(s.port, 0);
  std::string body = "\"" + std::string(1022, 'z') + "\"";  // exactly 1024 bytes
  auto r = http_raw(s.port, post("/echo", body));
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), body);
  body = "\"" + std::string(1023, 'z') + "\"";  // 1025 bytes
  r = http_raw(s.port, post("/echo", body));
  EXPECT_EQ(status_of(r), 413);
  EXPECT_EQ(body_of(r), R"j({"detail":"Request body too large (limit 1024 bytes)"})j");
}

// ---------------------------------------------------------------------------------------------
// 7: header block limit (431, then close)

TEST(HttpServer, HeaderBlockOver64KiBIs431ThenClose) {
  Server s;
  ASSERT_GT(s.port, 0);
  {
    Conn c(s.port);
    ASSERT_TRUE(c.ok());
    c.send(get("/", "X-Big: " + std::string(70 << 10, 'h') + "\r\n"));
    auto d = c.until_close(30s);
    EXPECT_TRUE(d.closed) << "the server did not close the connection";
    EXPECT_EQ(status_of(d.data), 431) << d.data.substr(0, 200);
    EXPECT_EQ(body_of(d.data), R"({"detail":"Request header fields too large"})");
  }
  {
    // Many small headers adding up to more than 64 KiB.
    std::string many;
    for (int i = 0; i < 1000; ++i)
      many += "X-H" + std::to_string(i) + ": " + std::string(80, 'v') + "\r\n";
    Conn c(s.port);
    ASSERT_TRUE(c.ok());
    c.send(get("/", many));
    auto d = c.until_close(30s);
    EXPECT_TRUE(d.closed);
    EXPECT_EQ(status_of(d.data), 431);
    EXPECT_EQ(body_of(d.data), R"({"detail":"Request header fields too large"})");
  }
  {
    // Headers of 60 KiB are within the limit.
    auto r = http_raw(s.port, get("/", "X-Big: " + std::string(60 << 10, 'h') + "\r\n"));
    EXPECT_EQ(status_of(r), 200);
  }
}

// ---------------------------------------------------------------------------------------------
// 8: read timeouts

TEST(HttpServer, SlowHeadIsClosedWithoutResponse) {
  Server s({"--read-timeout-ms", "1500"});
  ASSERT_GT(s.port, 0);
  Conn c(s.port);
  ASSERT_TRUE(c.ok());
  // 90 bytes at one byte per 300 ms would take 27 s; the head timeout is 1.5 s.
  const std::string head =
      get("/", "User-Agent: slow-client-test/1.0\r\nAccept: application/json\r\nX-Pad: 0123\r\n");
  ASSERT_GE(head.size(), 90u);
  Streamer slow(
      c.fd(),
      [&](std::size_t i) -> std::optional<std::string> {
        if (i >= head.size()) return std::nullopt;
        return std::string(1, head[i]);
      },
      300ms);
  auto d = c.until_close(60s);
  std::size_t sent_at_close = slow.sent();
  slow.stop();
  EXPECT_TRUE(d.closed) << "the server kept a trickling client";
  EXPECT_LT(sent_at_close, head.size()) << "closed only after the whole head had arrived";
  EXPECT_EQ(d.data.find("HTTP/1.1"), std::string::npos) << "a response was sent: " << d.data;
  EXPECT_EQ(status_of(http_raw(s.port, get("/"))), 200);
}

TEST(HttpServer, StalledBodyIsClosedWithoutResponse) {
  Server s({"--read-timeout-ms", "1500"});
  ASSERT_GT(s.port, 0);
  Conn c(s.port);
  ASSERT_TRUE(c.ok());
  c.send("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"a\":");
  auto d = c.until_close(60s);
  EXPECT_TRUE(d.closed) << "the server kept a stalled body";
  EXPECT_EQ(d.data, "");
}

TEST(HttpServer, TrickledBodyIsClosedAtTheWholeRequestDeadline) {
  // Every read brings a byte within the read timeout, but the whole request has a deadline.
  Server s({"--read-timeout-ms", "1000", "--body-timeout-ms", "2000"});
  ASSERT_GT(s.port, 0);
  Conn c(s.port);
  ASSERT_TRUE(c.ok());
  c.send("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200\r\n\r\n");
  const std::string body = "\"" + std::string(198, 'x') + "\"";
  Streamer slow(
      c.fd(),
      [&](std::size_t i) -> std::optional<std::string> {
        if (i >= body.size()) return std::nullopt;
        return std::string(1, body[i]);
      },
      300ms);
  auto d = c.until_close(60s);
  std::size_t sent_at_close = slow.sent();
  slow.stop();
  EXPECT_TRUE(d.closed) << "the server kept a body trickling one byte at a time";
  EXPECT_LT(sent_at_close, body.size()) << "closed only after the whole body had arrived";
  EXPECT_EQ(status_of(http_raw(s.port, get("/"))), 200);
}

TEST(HttpServer, BodiesBeyondTheBufferedBudgetGet503UntilTheBudgetFrees) {
  Server s({"--max-buffered-body", "1000", "--max-body", "800"});
  ASSERT_GT(s.port, 0);
  const std::string payload = "\"" + std::string(698, 'y') + "\"";  // 700 bytes of JSON
  auto request = [&] {
    return "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           "Content-Length: 700\r\n\r\n";
  };
  Conn held(s.port);
  ASSERT_TRUE(held.ok());
  // 700 bytes announced, 10 sent: held. (Connection: close, so the answer ends the read below.)
  std::string head = request();
  head.insert(head.size() - 2, "Connection: close\r\n");
  held.send(head + payload.substr(0, 10));
  std::this_thread::sleep_for(200ms);
  auto busy = http_raw(s.port, request() + payload);
  EXPECT_EQ(status_of(busy), 503) << busy;
  EXPECT_NE(body_of(busy).find("http_max_buffered_body_bytes"), std::string::npos) << busy;
  held.send(payload.substr(10));
  auto done = held.until_close(10s);
  EXPECT_EQ(status_of(done.data), 200) << done.data;
  EXPECT_EQ(status_of(http_raw(s.port, request() + payload)), 200)
      << "the budget was not given back";
}

TEST(HttpServer, FramingThatCannotBeServedGetsAnAnswer) {
  Server s;
  ASSERT_GT(s.port, 0);
  // A malformed chunk size: 400, not a silent close.
  auto bad_chunk =
      http_raw(s.port,
               "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
               "Content-Type: application/json\r\n\r\nzz\r\n{}\r\n0\r\n\r\n");
  EXPECT_EQ(status_of(bad_chunk), 400) << bad_chunk;
  EXPECT_NE(body_of(bad_chunk).find("Invalid HTTP request body"), std::string::npos) << bad_chunk;
  // A transfer coding we do not decode: 501, not an empty body.
  auto gzip = http_raw(s.port,
                       "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip\r\n"
                       "Content-Type: application/json\r\n\r\n\x1f\x8b");
  EXPECT_EQ(status_of(gzip), 501) << gzip;
  EXPECT_NE(body_of(gzip).find("Transfer-Encoding 'gzip' is not supported"), std::string::npos);
  // HTTP/1.1 without Host: 400; HTTP/1.0 needs none.
  auto no_host = http_raw(s.port, "GET / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(status_of(no_host), 400) << no_host;
  EXPECT_NE(body_of(no_host).find("Host header"), std::string::npos) << no_host;
  EXPECT_EQ(status_of(http_raw(s.port, "GET / HTTP/1.0\r\n\r\n")), 200);
  // Chunked bodies that are well formed are read as before.
  auto chunked = http_raw(s.port,
                          "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
                          "Content-Type: application/json\r\n\r\n7\r\n{\"a\":1}\r\n0\r\n\r\n");
  EXPECT_EQ(status_of(chunked), 200) << chunked;
  EXPECT_EQ(body_of(chunked), R"({"a":1})");
}

TEST(HttpServer, NumbersBeyondWhatJsonInterchangeKeepsAreRefusedClearly) {
  Server s;
  ASSERT_GT(s.port, 0);
  auto big = http_raw(s.port, post("/echo", R"({"n":123456789012345678901234567890})"));
  EXPECT_EQ(status_of(big), 400) << big;
  EXPECT_NE(body_of(big).find("integer out of range"), std::string::npos) << big;
  auto huge = http_raw(s.port, post("/echo", R"({"x":1e400})"));
  EXPECT_EQ(status_of(huge), 400) << huge;
  EXPECT_NE(body_of(huge).find("number out of range"), std::string::npos) << huge;
}

TEST(HttpServer, IdleConnectionIsClosedAfterKeepAliveTime) {
  Server s({"--keep-alive-ms", "1000"});
  ASSERT_GT(s.port, 0);
  {
    Conn c(s.port);  // connects, sends nothing
    ASSERT_TRUE(c.ok());
    auto d = c.until_close(60s);
    EXPECT_TRUE(d.closed) << "the idle connection was not closed";
    EXPECT_EQ(d.data, "");
  }
  {
    Conn c(s.port);  // one request, then idle
    ASSERT_TRUE(c.ok());
    c.send(get("/"));
    EXPECT_EQ(status_of(c.response()), 200);
    auto d = c.until_close(60s);
    EXPECT_TRUE(d.closed) << "the idle keep-alive connection was not closed";
    EXPECT_EQ(d.data, "");
  }
}

// ---------------------------------------------------------------------------------------------
// 9: keep-alive

TEST(HttpServer, KeepAliveServesSeveralRequestsOnOneConnection) {
  Server s;
  ASSERT_GT(s.port, 0);
  Conn c(s.port);
  ASSERT_TRUE(c.ok());
  c.send(get("/"));
  auto r = c.response();
  EXPECT_EQ(status_of(r), 200);
  EXPECT_NE(header_of(r, "Connection"), "close");
  c.send(post("/echo", R"({"n":2})"));
  r = c.response();
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), R"({"n":2})");

  // Pipelined: both requests in one write, answered in order.
  c.send(post("/echo", R"({"n":3})") + post("/echo", R"({"n":4})"));
  EXPECT_EQ(body_of(c.response()), R"({"n":3})");
  EXPECT_EQ(body_of(c.response()), R"({"n":4})");

  auto st = stats(s.port);
  ASSERT_TRUE(st.is_object());
  EXPECT_EQ(st.at("connections_accepted").to_number<int>(), 2);  // c and the stats connection
  EXPECT_EQ(st.at("requests").to_number<int>(), 5);
}

TEST(HttpServer, ConnectionCloseRequestIsClosedAfterResponse) {
  Server s;
  ASSERT_GT(s.port, 0);
  Conn c(s.port);
  ASSERT_TRUE(c.ok());
  c.send(get("/", "Connection: close\r\n"));
  auto d = c.until_close(30s);
  EXPECT_TRUE(d.closed) << "the server kept the connection open";
  EXPECT_EQ(status_of(d.data), 200);
  EXPECT_EQ(body_of(d.data), R"({"status":"ok"})");
  EXPECT_EQ(header_of(d.data, "Connection"), "close");

  // HTTP/1.0 without keep-alive is closed too.
  Conn c10(s.port);
  ASSERT_TRUE(c10.ok());
  c10.send("GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  d = c10.until_close(30s);
  EXPECT_TRUE(d.closed);
  EXPECT_EQ(body_of(d.data), R"({"status":"ok"})");
}

TEST(HttpServer, ExpectContinueIsHonoured) {
  Server s;
  ASSERT_GT(s.port, 0);
  Conn c(s.port);
  ASSERT_TRUE(c.ok());
  c.send(
      "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Expect: 100-continue\r\nContent-Length: 7\r\n\r\n");
  auto interim = c.response();
  EXPECT_EQ(status_of(interim), 100);
  c.send(R"({"a":1})");
  auto r = c.response();
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), R"({"a":1})");
}

// ---------------------------------------------------------------------------------------------
// 10: session cookies

struct CookieParts {
  std::string value;  // "<payload>.<signature>"
  std::string session_id;
};

// Checks the exact Set-Cookie shape (docs/design/wire-compatibility.md#session-cookies) and decodes
// the session id.
CookieParts check_set_cookie(const std::string& raw, const std::string& name) {
  CookieParts out;
  auto set_cookie = header_of(raw, "Set-Cookie");
  std::smatch m;
  std::regex shape(
      "^" + name +
      "=(([A-Za-z0-9_-]+)\\.[A-Za-z0-9_-]+); Path=/; Max-Age=1209600; HttpOnly; SameSite=lax$");
  EXPECT_TRUE(std::regex_match(set_cookie, m, shape)) << "Set-Cookie: " << set_cookie;
  if (m.empty()) return out;
  out.value = m[1];
  auto payload = base64url_decode(m[2].str());
  EXPECT_TRUE(payload.has_value());
  if (!payload) return out;
  auto v = parse(*payload);
  EXPECT_TRUE(v.is_object() && v.as_object().size() == 1 && v.as_object().contains("session_id"))
      << *payload;
  if (auto* id = v.is_object() ? v.as_object().if_contains("session_id") : nullptr;
      id && id->is_string())
    out.session_id = std::string(id->as_string());
  EXPECT_TRUE(std::regex_match(out.session_id, kUuid4)) << out.session_id;
  return out;
}

std::string session_of(const std::string& raw) {
  if (status_of(raw) != 200) return "";
  auto v = parse(body_of(raw));
  return v.is_object() && v.as_object().contains("session_id")
             ? std::string(v.at("session_id").as_string())
             : "";
}

TEST(HttpServer, EveryResponseCarriesTheSessionCookie) {
  Server s({"--cookie", kCookieName});
  ASSERT_GT(s.port, 0);
  struct Case {
    std::string request;
    int status;
  };
  const std::vector<Case> cases = {
      {get("/"), 200},
      {get("/no/such/path"), 404},
      {get("/echo"), 405},
      {post("/typed", "{}"), 422},
      {post("/throw", "{}"), 500},
      {post("/echo", "{oops"), 400},
  };
  std::set<std::string> ids;
  for (const auto& c : cases) {
    auto r = http_raw(s.port, c.request);
    EXPECT_EQ(status_of(r), c.status) << c.request;
    auto parts = check_set_cookie(r, kCookieName);
    EXPECT_FALSE(parts.session_id.empty()) << c.request;
    ids.insert(parts.session_id);
  }
  EXPECT_EQ(ids.size(), cases.size()) << "requests without a cookie must get fresh session ids";

  // A server without --cookie sets no cookie.
  Server plain;
  ASSERT_GT(plain.port, 0);
  EXPECT_EQ(header_of(http_raw(plain.port, get("/")), "Set-Cookie"), "");
}

TEST(HttpServer, RejectionsCarryTheSessionCookieToo) {
  Server s({"--cookie", kCookieName, "--max-body", "1024"});
  ASSERT_GT(s.port, 0);
  auto first = http_raw(s.port, post("/session", "{}"));
  auto id = session_of(first);
  auto cookie = check_set_cookie(first, kCookieName).value;
  ASSERT_FALSE(cookie.empty());
  // 413 is decided after the head is parsed: the client's session is kept.
  auto too_large =
      http_raw(s.port, post("/echo", std::string(2048, ' '),
                            "Cookie: " + std::string(kCookieName) + "=" + cookie + "\r\n"));
  EXPECT_EQ(status_of(too_large), 413);
  EXPECT_EQ(check_set_cookie(too_large, kCookieName).session_id, id);
  // 431 and a broken request line come before any header is known: a fresh session.
  auto huge_head = http_raw(s.port, get("/", "X-Big: " + std::string(70 * 1024, 'a') + "\r\n"));
  EXPECT_EQ(status_of(huge_head), 431);
  auto fresh = check_set_cookie(huge_head, kCookieName).session_id;
  EXPECT_TRUE(std::regex_match(fresh, kUuid4)) << fresh;
  EXPECT_NE(fresh, id);
}

TEST(HttpServer, SessionCookieKeepsTheSessionAndRejectsTampering) {
  Server s({"--cookie", kCookieName});
  ASSERT_GT(s.port, 0);
  auto first = http_raw(s.port, post("/session", "{}"));
  ASSERT_EQ(status_of(first), 200);
  auto id = session_of(first);
  EXPECT_TRUE(std::regex_match(id, kUuid4)) << id;
  auto parts = check_set_cookie(first, kCookieName);
  EXPECT_EQ(parts.session_id, id);
  ASSERT_FALSE(parts.value.empty());
  const std::string cookie_header =
      "Cookie: " + std::string(kCookieName) + "=" + parts.value + "\r\n";

  // Sending the cookie back keeps the session, on every route (including errors).
  for (int i = 0; i < 3; ++i) {
    auto r = http_raw(s.port, post("/session", "{}", cookie_header));
    EXPECT_EQ(session_of(r), id);
    EXPECT_EQ(check_set_cookie(r, kCookieName).session_id, id);
  }
  auto r404 = http_raw(s.port, get("/no/such/path", cookie_header));
  EXPECT_EQ(status_of(r404), 404);
  EXPECT_EQ(check_set_cookie(r404, kCookieName).session_id, id);
  // Among other cookies.
  auto r = http_raw(s.port, post("/session", "{}",
                                 "Cookie: other=1; " + std::string(kCookieName) + "=" +
                                     parts.value + "; last=2\r\n"));
  EXPECT_EQ(session_of(r), id);

  // Without the cookie: a new session.
  auto fresh = session_of(http_raw(s.port, post("/session", "{}")));
  EXPECT_TRUE(std::regex_match(fresh, kUuid4));
  EXPECT_NE(fresh, id);

  // A tampered signature: a new session.
  std::string tampered = parts.value;
  char& sig0 = tampered[tampered.find('.') + 1];  // a data bit, not base64 padding
  sig0 = sig0 == 'A' ? 'B' : 'A';
  r = http_raw(s.port, post("/session", "{}",
                            "Cookie: " + std::string(kCookieName) + "=" + tampered + "\r\n"));
  auto tampered_id = session_of(r);
  EXPECT_TRUE(std::regex_match(tampered_id, kUuid4));
  EXPECT_NE(tampered_id, id);
  EXPECT_EQ(check_set_cookie(r, kCookieName).session_id, tampered_id);

  // A payload of another session under the first cookie's signature: a new session.
  auto other = check_set_cookie(http_raw(s.port, post("/session", "{}")), kCookieName);
  std::string spliced =
      other.value.substr(0, other.value.find('.')) + parts.value.substr(parts.value.find('.'));
  auto spliced_id = session_of(http_raw(
      s.port,
      post("/session", "{}", "Cookie: " + std::string(kCookieName) + "=" + spliced + "\r\n")));
  EXPECT_NE(spliced_id, id);
  EXPECT_NE(spliced_id, other.session_id);

  // Garbage values: a new session, no error.
  r = http_raw(s.port, post("/session", "{}",
                            "Cookie: " + std::string(kCookieName) + "=%%%not-a-cookie\r\n"));
  EXPECT_EQ(status_of(r), 200);
  EXPECT_TRUE(std::regex_match(session_of(r), kUuid4));
}

TEST(HttpServer, ServersOfOneDeploymentShareTheSigningKeyAndNoOneElseCanSign) {
  // The orchestrator hands one random key to every server of a deployment.
  const std::string key = "GYM_SESSION_SIGNING_KEY=" + gym::http::new_session_key();
  Server a({"--cookie", kCookieName}, {key});
  Server b({"--cookie", kCookieName}, {key});
  Server stranger({"--cookie", kCookieName});  // same cookie name, its own random key
  Server other({"--cookie", "MCQAResourcesServer___mcqa"}, {key});
  ASSERT_GT(a.port, 0);
  ASSERT_GT(b.port, 0);
  ASSERT_GT(stranger.port, 0);
  ASSERT_GT(other.port, 0);
  auto ra = http_raw(a.port, post("/session", "{}"));
  auto id = session_of(ra);
  auto parts = check_set_cookie(ra, kCookieName);
  ASSERT_FALSE(parts.value.empty());
  const std::string cookie_header =
      "Cookie: " + std::string(kCookieName) + "=" + parts.value + "\r\n";
  auto rb = http_raw(b.port, post("/session", "{}", cookie_header));
  EXPECT_EQ(session_of(rb), id) << "server b rejected server a's cookie";
  EXPECT_EQ(check_set_cookie(rb, kCookieName).value, parts.value);
  // A server outside the deployment does not take it, and the cookie name is no key: a cookie
  // signed with it (upstream's scheme, which anyone can compute) is a new session.
  EXPECT_NE(session_of(http_raw(stranger.port, post("/session", "{}", cookie_header))), id);
  const auto forged = gym::http::SessionCookie(kCookieName, kCookieName).sign(id);
  EXPECT_NE(session_of(http_raw(
                a.port, post("/session", "{}",
                             "Cookie: " + std::string(kCookieName) + "=" + forged + "\r\n"))),
            id);
  // The same value under another server's cookie name is no session there.
  auto ro = http_raw(
      other.port,
      post("/session", "{}", "Cookie: MCQAResourcesServer___mcqa=" + parts.value + "\r\n"));
  EXPECT_NE(session_of(ro), id);
  check_set_cookie(ro, "MCQAResourcesServer___mcqa");
}

// ---------------------------------------------------------------------------------------------
// 11: rollout prefix and the catch-all tool route

TEST(HttpServer, RolloutPrefixIsStrippedBeforeRouting) {
  Server s;
  ASSERT_GT(s.port, 0);
  auto r = http_raw(s.port, post("/ng-rollout/abc123/echo", R"({"p":1})"));
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), R"({"p":1})");
  r = http_raw(s.port, post("/ng-rollout/abc123/training-token-capture/echo", R"({"p":2})"));
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), R"({"p":2})");
  r = http_raw(s.port, post("/echo?x=1", R"({"p":3})"));
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), R"({"p":3})");
  r = http_raw(s.port, get("/ng-rollout/abc123/"));
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), R"({"status":"ok"})");

  r = http_raw(s.port, post("/get_weather", R"({"city":"Paris"})"));
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), R"({"tool":"/get_weather","route":"/{path}"})");
  r = http_raw(s.port, post("/ng-rollout/r-9/training-token-capture/get_weather", "{}"));
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), R"({"tool":"/get_weather","route":"/{path}"})");
  // Exact routes win over the catch-all.
  r = http_raw(s.port, post("/session", "{}"));
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), R"({"session_id":""})");

  // The catch-all covers one segment only.
  r = http_raw(s.port, post("/a/b", "{}"));
  EXPECT_EQ(status_of(r), 404);
  EXPECT_EQ(body_of(r), R"({"detail":"Not Found"})");
  r = http_raw(s.port, post("/ng-rollout/abc123/a/b", "{}"));
  EXPECT_EQ(status_of(r), 404);
  EXPECT_EQ(body_of(r), R"({"detail":"Not Found"})");
}

// ---------------------------------------------------------------------------------------------
// 12: graceful shutdown

// Waits until the server has dispatched `expected_other` requests besides the /stats polls.
bool wait_dispatched(int port, int expected_other, std::chrono::seconds guard = 20s) {
  auto deadline = Clock::now() + guard;
  for (int polls = 1; Clock::now() < deadline; ++polls) {
    auto st = stats(port);
    if (!st.is_object()) return false;
    if (st.at("requests").to_number<int>() >= polls + expected_other) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

TEST(HttpServer, SigtermLetsInFlightRequestFinishThenExitsZero) {
  Server s;
  ASSERT_GT(s.port, 0);
  Conn c(s.port);
  ASSERT_TRUE(c.ok());
  c.send(post("/sleep", R"({"ms":300})"));
  ASSERT_TRUE(wait_dispatched(s.port, 1));
  s.proc.signal(SIGTERM);
  auto r = c.response(20s);
  EXPECT_EQ(status_of(r), 200);
  auto v = parse(body_of(r));
  EXPECT_EQ(v.at("slept").to_number<int>(), 300);
  EXPECT_EQ(v.at("pid").to_number<pid_t>(), s.proc.pid());
  // The response was written during shutdown, so it ends the connection.
  EXPECT_EQ(header_of(r, "Connection"), "close");
  EXPECT_TRUE(c.until_close(20s).closed);
  // Shutdown has begun (the response above says so): no new connections.
  int fd = connect_tcp(s.port);
  EXPECT_LT(fd, 0) << "a connection was accepted during shutdown";
  if (fd >= 0) ::close(fd);
  EXPECT_EQ(s.proc.wait_exit(15s), 0);
  fd = connect_tcp(s.port);
  EXPECT_LT(fd, 0) << "a connection was accepted after exit";
  if (fd >= 0) ::close(fd);
}

TEST(HttpServer, SigtermCutsOffLongRequestsAfterGraceAndExitsZero) {
  Server s;
  ASSERT_GT(s.port, 0);
  Conn slow(s.port), idle(s.port);
  ASSERT_TRUE(slow.ok());
  ASSERT_TRUE(idle.ok());
  idle.send(get("/"));
  EXPECT_EQ(status_of(idle.response()), 200);
  slow.send(post("/sleep", R"({"ms":5000})"));
  ASSERT_TRUE(wait_dispatched(s.port, 2));
  s.proc.signal(SIGTERM);
  auto d = slow.until_close(20s);
  EXPECT_TRUE(d.closed) << "the in-flight request was not cut off";
  EXPECT_EQ(d.data, "") << "a response was sent: " << d.data;
  auto di = idle.until_close(20s);
  EXPECT_TRUE(di.closed) << "the idle keep-alive connection was not closed";
  EXPECT_EQ(di.data, "");
  EXPECT_EQ(s.proc.wait_exit(15s), 0);
}

TEST(HttpServer, SigintIsGracefulToo) {
  Server s;
  ASSERT_GT(s.port, 0);
  EXPECT_EQ(status_of(http_raw(s.port, get("/"))), 200);
  s.proc.signal(SIGINT);
  EXPECT_EQ(s.proc.wait_exit(15s), 0);
}

// ---------------------------------------------------------------------------------------------
// 13: forked workers

// Collects worker pids from /stats over fresh connections until `want` distinct ones answered
// (or `attempts` connections were made).
std::set<pid_t> worker_pids(int port, std::size_t want, int attempts = 2000,
                            const std::set<pid_t>& ignore = {}) {
  std::set<pid_t> pids;
  for (int i = 0; i < attempts && pids.size() < want; ++i) {
    auto st = stats(port);
    if (!st.is_object()) {
      std::this_thread::sleep_for(10ms);
      continue;
    }
    auto pid = st.at("pid").to_number<pid_t>();
    if (!ignore.count(pid)) pids.insert(pid);
  }
  return pids;
}

TEST(HttpServer, WorkersAreChildrenOfTheRootAndStopWithIt) {
  Server s({"--workers", "2"});
  ASSERT_GT(s.port, 0);
  auto pids = worker_pids(s.port, 3, 300);  // ask for 3 to see that there are only 2
  ASSERT_EQ(pids.size(), 2u);
  for (pid_t p : pids) {
    EXPECT_NE(p, s.proc.pid()) << "the root serves requests itself";
    EXPECT_EQ(parent_of(p), s.proc.pid()) << "worker " << p << " is not a child of the root";
  }
  s.proc.signal(SIGTERM);
  EXPECT_EQ(s.proc.wait_exit(15s), 0);
  for (pid_t p : pids) EXPECT_TRUE(process_gone(p)) << "worker " << p << " outlived the root";
  int fd = connect_tcp(s.port);
  EXPECT_LT(fd, 0);
  if (fd >= 0) ::close(fd);
}

TEST(HttpServer, KilledWorkerIsRestarted) {
  Server s({"--workers", "2"});
  ASSERT_GT(s.port, 0);
  auto pids = worker_pids(s.port, 2);
  ASSERT_EQ(pids.size(), 2u);
  pid_t victim = *pids.begin();
  pid_t survivor = *pids.rbegin();
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  // Guard loop: a new worker pid shows up in /stats answers.
  auto fresh = worker_pids(s.port, 1, 4000, {survivor});
  ASSERT_EQ(fresh.size(), 1u) << "no restarted worker answered";
  pid_t replacement = *fresh.begin();
  EXPECT_NE(replacement, victim);
  EXPECT_EQ(parent_of(replacement), s.proc.pid());
  EXPECT_TRUE(process_gone(victim));
  EXPECT_TRUE(s.proc.running());
  s.proc.signal(SIGTERM);
  EXPECT_EQ(s.proc.wait_exit(15s), 0);
  EXPECT_TRUE(process_gone(replacement));
  EXPECT_TRUE(process_gone(survivor));
}

TEST(HttpServer, WorkersDyingTooOftenStopTheRootWithAnError) {
  Server s({"--workers", "2"});
  ASSERT_GT(s.port, 0);
  // More than 5 worker deaths within 60 s end the root with an error.
  std::set<pid_t> killed;
  for (int i = 0; i < 6; ++i) {
    auto live = worker_pids(s.port, 1, 4000, killed);
    ASSERT_EQ(live.size(), 1u) << "no live worker answered after " << i << " kills";
    pid_t p = *live.begin();
    ASSERT_EQ(parent_of(p), s.proc.pid());
    ASSERT_EQ(::kill(p, SIGKILL), 0);
    killed.insert(p);
  }
  int code = s.proc.wait_exit(20s);
  EXPECT_GT(code, 0) << "the root did not stop with an error";
  EXPECT_LT(code, 128) << "the root died of a signal";
  for (pid_t p : killed) EXPECT_TRUE(process_gone(p));
  int fd = connect_tcp(s.port);
  EXPECT_LT(fd, 0);
  if (fd >= 0) ::close(fd);
}

// ---------------------------------------------------------------------------------------------
// 14: port in use

TEST(HttpServer, PortAlreadyInUseExitsWithCode2) {
  Server first;
  ASSERT_GT(first.port, 0);
  const std::string port = std::to_string(first.port);
  // Through a shell only to capture stderr; exec keeps the exit code.
  ChildProcess second({"/bin/sh", "-c", "exec '" + server_binary() + "' --port " + port + " 2>&1"});
  auto line = second.wait_for_line("error: ");
  EXPECT_EQ(line, "cannot listen on 127.0.0.1:" + port +
                      ": Address already in use (is the port already in use?)");
  EXPECT_EQ(second.wait_exit(15s), 2);
  EXPECT_EQ(second.output().find("LISTENING"), std::string::npos);
  EXPECT_EQ(status_of(http_raw(first.port, get("/"))), 200);
}

// ---------------------------------------------------------------------------------------------
// 15: garbage input

TEST(HttpServer, BinaryGarbageIs400AndServerSurvives) {
  Server s;
  ASSERT_GT(s.port, 0);
  static const char kJunk[] = "\x01\x02\xff\xfe\x7f junk \x00\x10\x80 HTTP/9\r\n\r\n";
  const std::string junk(kJunk, sizeof kJunk - 1);
  {
    Conn c(s.port);
    ASSERT_TRUE(c.ok());
    c.send(junk);
    auto d = c.until_close(30s);
    EXPECT_TRUE(d.closed);
    EXPECT_EQ(status_of(d.data), 400) << d.data;
    auto body = body_of(d.data);
    auto v = parse(body);
    EXPECT_TRUE(v.is_object() && v.as_object().contains("detail")) << body;
  }
  {
    // Garbage after a good request on a keep-alive connection.
    Conn c(s.port);
    ASSERT_TRUE(c.ok());
    c.send(get("/"));
    EXPECT_EQ(status_of(c.response()), 200);
    c.send("GET / HTTP/1.1\r\nBad Header Without Colon\r\n\r\n");
    auto d = c.until_close(30s);
    EXPECT_TRUE(d.closed);
    EXPECT_EQ(status_of(d.data), 400) << d.data;
  }
  EXPECT_TRUE(s.proc.running());
  auto r = http_raw(s.port, get("/"));
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), R"({"status":"ok"})");
}

}  // namespace
