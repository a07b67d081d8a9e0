#include "http/client_exchange.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>

namespace gym::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

bhttp::verb to_verb(Method m) {
  switch (m) {
    case Method::get:
      return bhttp::verb::get;
    case Method::head:
      return bhttp::verb::head;
    case Method::post:
      return bhttp::verb::post;
    case Method::put:
      return bhttp::verb::put;
    case Method::patch:
      return bhttp::verb::patch;
    case Method::del:
      return bhttp::verb::delete_;
    case Method::options:
      return bhttp::verb::options;
    case Method::other:
      break;
  }
  return bhttp::verb::unknown;
}

bhttp::request<bhttp::string_body> make_request(const Url& u, const ClientRequest& req,
                                                Method method, const std::string& body) {
  bhttp::request<bhttp::string_body> out{to_verb(method), u.target, 11};
  out.set(bhttp::field::host, u.host + ":" + u.port);
  if (!body.empty()) out.set(bhttp::field::content_type, "application/json");
  for (const auto& hd : req.headers) out.set(hd.name, hd.value);
  if (!req.cookies.empty()) {
    std::string cookie;
    for (const auto& [k, v] : req.cookies) {
      if (!cookie.empty()) cookie += "; ";
      cookie += k + "=" + v;
    }
    out.set(bhttp::field::cookie, cookie);
  }
  out.body() = body;
  out.prepare_payload();
  return out;
}

// The status, headers, cookies (from Set-Cookie, in order) and body of `res`.
ClientResponse to_client_response(bhttp::response<bhttp::string_body>& res) {
  ClientResponse r;
  r.status = static_cast<int>(res.result_int());
  for (const auto& f : res) {
    r.headers.push_back({std::string(f.name_string()), std::string(f.value())});
    if (f.name() == bhttp::field::set_cookie) {
      auto v = f.value();
      auto pair = v.substr(0, v.find(';'));
      auto eq = pair.find('=');
      if (eq != std::string_view::npos)
        r.cookies.emplace_back(std::string(pair.substr(0, eq)), std::string(pair.substr(eq + 1)));
    }
  }
  r.body = std::move(res.body());
  return r;
}

// "2 s", "0.25 s".
std::string seconds_text(std::chrono::milliseconds ms) {
  if (ms.count() % 1000 == 0) return std::to_string(ms.count() / 1000) + " s";
  std::string text = std::to_string(static_cast<double>(ms.count()) / 1000.0);
  text.erase(text.find_last_not_of('0') + 1);
  return text + " s";
}

// How the exchange failed. `nothing_received`: not a byte of the response arrived.
// `timeout_text`: what a timeout means for this request.
TransportError exchange_failure(const boost::system::error_code& ec, bool reused,
                                bool nothing_received, Method method, const std::string& url,
                                const std::string& timeout_text) {
  const bool closed = closed_before_response(ec);
  TransportError e;
  e.failure = ec == beast::error::timeout            ? AttemptFailure::read_timeout
              : reused && nothing_received && closed ? AttemptFailure::stale
              : closed                               ? AttemptFailure::refused_or_closed
                                                     : AttemptFailure::other;
  e.message = (ec == beast::error::timeout ? timeout_text : ec.message()) + " (" +
              to_string(method).data() + " " + url + ")";
  return e;
}

}  // namespace

bool closed_before_response(const boost::system::error_code& ec) {
  return ec == asio::error::connection_refused || ec == asio::error::connection_reset ||
         ec == asio::error::eof || ec == bhttp::error::end_of_stream ||
         ec == asio::error::broken_pipe || ec == asio::error::connection_aborted ||
         ec == asio::ssl::error::stream_truncated;  // a TLS peer that closed without close_notify
}

namespace {

// The connection's timer before each read or write: the whole-attempt deadline of a request with
// its own timeout, else the read timeout from now (none when zero), so a response that keeps
// arriving never times out and a silent server does.
class ProgressDeadline {
 public:
  ProgressDeadline(beast::tcp_stream& stream, const ClientRequest& req,
                   std::chrono::milliseconds read_timeout)
      : stream_(stream), read_timeout_(read_timeout) {
    if (req.timeout) attempt_deadline_ = std::chrono::steady_clock::now() + *req.timeout;
  }
  void arm() {
    if (attempt_deadline_) {
      stream_.expires_at(*attempt_deadline_);
    } else if (read_timeout_.count() > 0) {
      stream_.expires_after(read_timeout_);
    } else {
      stream_.expires_never();
    }
  }
  // For the response a server may have sent before it stopped reading the request.
  void arm_at_most(std::chrono::milliseconds limit) {
    if (read_timeout_.count() > 0) limit = std::min(limit, read_timeout_);
    stream_.expires_after(limit);
  }

 private:
  beast::tcp_stream& stream_;
  std::chrono::milliseconds read_timeout_;
  std::optional<std::chrono::steady_clock::time_point> attempt_deadline_;
};

// A server that rejects a request early (413) answers and closes while the body is still being
// written; its answer is then already in the socket, or about to be.
constexpr std::chrono::milliseconds kEarlyResponseWait{5'000};

// Writes the request and reads the response on `stream` (plain TCP or TLS over it); one
// template, so the plain path pays no indirection.
template <typename Stream>
asio::awaitable<boost::system::error_code> write_and_read(
    Stream& stream, ClientConnection& c, bhttp::request<bhttp::string_body>& out_req,
    bhttp::response_parser<bhttp::string_body>& parser, ProgressDeadline& deadline) {
  bhttp::request_serializer<bhttp::string_body> serializer(out_req);
  boost::system::error_code write_ec;
  while (!serializer.is_done()) {
    deadline.arm();
    auto [ec, n] = co_await bhttp::async_write_some(stream, serializer, kTuple);
    (void)n;
    if (ec) {
      write_ec = ec;
      break;
    }
  }
  if (write_ec) {
    if (write_ec == beast::error::timeout || !closed_before_response(write_ec)) co_return write_ec;
    deadline.arm_at_most(kEarlyResponseWait);
    auto [ec, n] = co_await bhttp::async_read(stream, c.buffer, parser, kTuple);
    (void)n;
    co_return ec ? write_ec : boost::system::error_code{};
  }
  while (!parser.is_done()) {
    deadline.arm();
    auto [ec, n] = co_await bhttp::async_read_some(stream, c.buffer, parser, kTuple);
    (void)n;
    if (ec) co_return ec;
  }
  co_return boost::system::error_code{};
}

}  // namespace

asio::awaitable<Exchange> exchange(ClientConnection& c, const Url& u, const ClientRequest& req,
                                   Method method, const std::string& body, bool reused,
                                   std::chrono::milliseconds read_timeout) {
  auto out_req = make_request(u, req, method, body);
  ProgressDeadline deadline(c.stream, req, read_timeout);
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(boost::none);
  parser.header_limit(1u << 20);
  if (method == Method::head) parser.skip(true);
  const boost::system::error_code ec =
      c.tls ? co_await write_and_read(*c.tls, c, out_req, parser, deadline)
            : co_await write_and_read(c.stream, c, out_req, parser, deadline);
  Exchange out;
  if (ec) {
    const std::string timeout_text =
        req.timeout ? std::string("timed out")
                    : "timed out: the server sent nothing and took nothing for " +
                          seconds_text(read_timeout) + " (global_http_read_timeout_seconds)";
    out.error = exchange_failure(ec, reused, !parser.got_some(), method, req.url, timeout_text);
    co_return out;
  }
  auto& res = parser.get();
  // A response that came while the request was still being written ends the connection.
  out.keep_alive = res.keep_alive() && parser.is_done();
  out.response = to_client_response(res);
  c.stream.expires_never();
  co_return out;
}

}  // namespace gym::http
