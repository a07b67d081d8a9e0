#include "http/client_exchange.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

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

// How the exchange failed. `nothing_received`: not a byte of the response arrived.
TransportError exchange_failure(const boost::system::error_code& ec, bool reused,
                                bool nothing_received, Method method, const std::string& url) {
  const bool closed = closed_before_response(ec);
  TransportError e;
  e.failure = reused && nothing_received && closed ? AttemptFailure::stale
              : closed                             ? AttemptFailure::refused_or_closed
                                                   : AttemptFailure::other;
  e.message = (ec == beast::error::timeout ? std::string("timed out") : ec.message()) + " (" +
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

asio::awaitable<Exchange> exchange(ClientConnection& c, const Url& u, const ClientRequest& req,
                                   Method method, const std::string& body, bool reused) {
  auto out_req = make_request(u, req, method, body);
  if (req.timeout) {
    c.stream.expires_after(*req.timeout);
  } else {
    c.stream.expires_never();
  }
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(boost::none);
  parser.header_limit(1u << 20);
  if (method == Method::head) parser.skip(true);
  boost::system::error_code ec;
  // The same exchange over TLS or plain TCP: one branch, no indirection on the plain path.
  if (c.tls) {
    auto [wec, wn] = co_await bhttp::async_write(*c.tls, out_req, kTuple);
    (void)wn;
    ec = wec;
    if (!ec) {
      auto [rec, rn] = co_await bhttp::async_read(*c.tls, c.buffer, parser, kTuple);
      (void)rn;
      ec = rec;
    }
  } else {
    auto [wec, wn] = co_await bhttp::async_write(c.stream, out_req, kTuple);
    (void)wn;
    ec = wec;
    if (!ec) {
      auto [rec, rn] = co_await bhttp::async_read(c.stream, c.buffer, parser, kTuple);
      (void)rn;
      ec = rec;
    }
  }
  Exchange out;
  if (ec) {
    out.error = exchange_failure(ec, reused, !parser.got_some(), method, req.url);
    co_return out;
  }
  auto& res = parser.get();
  out.keep_alive = res.keep_alive();
  out.response = to_client_response(res);
  c.stream.expires_never();
  co_return out;
}

}  // namespace gym::http
