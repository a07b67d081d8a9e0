#include "http/client_exchange.h"

#include "core/json_text.h"
#include "http/response_reader.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string_view>

namespace gym::http {

boost::json::value ClientResponse::json(boost::json::storage_ptr storage) const {
  boost::system::error_code ec;
  auto v = core::parse_json(body, ec, nullptr, std::move(storage));
  if (ec) throw std::runtime_error("response is not valid JSON: " + ec.message());
  return v;
}

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

// "2 s", "0.25 s".
std::string seconds_text(std::chrono::milliseconds ms) {
  if (ms.count() % 1000 == 0) return std::to_string(ms.count() / 1000) + " s";
  std::string text = std::to_string(static_cast<double>(ms.count()) / 1000.0);
  text.erase(text.find_last_not_of('0') + 1);
  return text + " s";
}

// How the exchange failed. `nothing_received`: not a byte of the response arrived; `sent`: the
// whole request was written. `timeout_text`: what a timeout means for this request.
TransportError exchange_failure(const boost::system::error_code& ec, bool reused,
                                bool nothing_received, bool sent, Method method,
                                const std::string& url, const std::string& timeout_text) {
  const bool closed = closed_before_response(ec);
  TransportError e;
  e.failure = ec == beast::error::timeout            ? AttemptFailure::read_timeout
              : reused && nothing_received && closed ? AttemptFailure::stale
              : closed && sent                       ? AttemptFailure::closed_after_request
              : closed                               ? AttemptFailure::refused_or_closed
                                                     : AttemptFailure::other;
  // Without the query string: the message reaches failure rows, spans and logs (where query strings
  // are never attached), and a query may hold a key.
  e.message = (ec == beast::error::timeout ? timeout_text : ec.message()) + " (" +
              to_string(method).data() + " " + url.substr(0, url.find('?')) + ")";
  if (e.failure == AttemptFailure::closed_after_request)
    e.message = "the connection was closed after the whole request was sent: " + e.message;
  return e;
}

// The framing (Content-Length, Transfer-Encoding) is the client's own; the caller's copies of
// those fields are left out. A name or value that would end its line is refused, so a config
// value cannot inject a header or a request.
bool framing_field(std::string_view name) {
  return iequals(name, "content-length") || iequals(name, "transfer-encoding");
}

void check_field(std::string_view name, std::string_view value) {
  const auto breaks = [](std::string_view s) {
    return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
  };
  if (name.empty() || breaks(name) || name.find(':') != std::string_view::npos || breaks(value))
    throw RequestError("invalid HTTP header '" + std::string(name.substr(0, 64)) +
                       "': a header name must be non-empty without ':', and neither name nor "
                       "value may contain a line break");
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  ((out += name) += ": ") += value;
  out += "\r\n";
}

}  // namespace

std::string request_head(const Url& u, const ClientRequest& req, Method method,
                         std::size_t body_size, const telemetry::TraceContext* propagated) {
  if (method == Method::other) throw RequestError("unsupported HTTP method");
  std::string out;
  out.reserve(256 + u.target.size());
  (((out += to_string(method)) += ' ') += u.target) += " HTTP/1.1\r\n";
  // A later header of the same name replaces an earlier one (Host and Content-Type included).
  const auto replaced = [&](std::size_t i, std::string_view name) {
    for (std::size_t j = i + 1; j < req.headers.size(); ++j)
      if (iequals(req.headers[j].name, name)) return true;
    return false;
  };
  const bool cookie_header = !req.cookies.empty();
  const bool trace_state = propagated && !propagated->span.trace_state.empty();
  const bool baggage = propagated && !propagated->baggage.empty();
  const auto injected = [&](std::string_view name) {
    return propagated &&
           (iequals(name, "traceparent") || (trace_state && iequals(name, "tracestate")) ||
            (baggage && iequals(name, "baggage")));
  };
  bool host = false, content_type = false;
  for (const Header& h : req.headers) {
    check_field(h.name, h.value);
    host = host || iequals(h.name, "host");
    content_type = content_type || iequals(h.name, "content-type");
  }
  if (!host) {
    const bool ipv6 = u.host.find(':') != std::string::npos;
    out += "Host: ";
    if (ipv6) out += '[';
    out += u.host;
    if (ipv6) out += ']';
    ((out += ':') += u.port) += "\r\n";
  }
  if (body_size != 0 && !content_type) append_field(out, "Content-Type", "application/json");
  for (std::size_t i = 0; i < req.headers.size(); ++i) {
    const Header& h = req.headers[i];
    if (framing_field(h.name) || replaced(i, h.name) ||
        (cookie_header && iequals(h.name, "cookie")) || injected(h.name))
      continue;
    append_field(out, h.name, h.value);
  }
  if (propagated) {
    // The whole line in one append, the value written into it.
    constexpr std::string_view line =
        "traceparent: 00-00000000000000000000000000000000-0000000000000000-00\r\n";
    constexpr std::string_view name = "traceparent: ";
    static_assert(line.size() == name.size() + telemetry::kTraceparentSize + 2);
    const std::size_t at = out.size();
    out += line;
    telemetry::write_traceparent(out.data() + at + name.size(), propagated->span);
    if (trace_state) append_field(out, "tracestate", propagated->span.trace_state);
    if (baggage) append_field(out, "baggage", propagated->baggage);
  }
  if (cookie_header) {
    out += "Cookie: ";
    bool first = true;
    for (const auto& [k, v] : req.cookies) {
      check_field(k, v);
      if (!first) out += "; ";
      ((out += k) += '=') += v;
      first = false;
    }
    out += "\r\n";
  }
  // As Beast's prepare_payload: a length for every body, and for an empty one with the methods
  // that carry one.
  if (body_size != 0 || method == Method::post || method == Method::put ||
      method == Method::options)
    append_field(out, "Content-Length", std::to_string(body_size));
  out += "\r\n";
  return out;
}

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

// Reads the response into `reader` from `stream` (plain TCP or TLS over it), the bytes kept in
// the connection's buffer between reads; the deadline is armed before each read by `arm`.
// Returns the transport error (the reader's own failures are in the reader).
template <typename Stream, typename Arm>
asio::awaitable<boost::system::error_code> read_response(Stream& stream, ClientConnection& c,
                                                         ResponseReader& reader, Arm arm) {
  // Enough for a large body in few reads; the reader bounds what stays buffered unparsed.
  constexpr std::size_t kReadSize = 64 * 1024;
  for (;;) {
    if (c.buffer.size() != 0) {
      const auto data = c.buffer.data();
      c.buffer.consume(
          reader.put(std::string_view(static_cast<const char*>(data.data()), data.size())));
    }
    if (reader.done() || reader.failed()) co_return boost::system::error_code{};
    arm();
    auto [ec, n] = co_await stream.async_read_some(c.buffer.prepare(kReadSize), kTuple);
    c.buffer.commit(n);
    if (ec == asio::error::eof && reader.got_some()) {
      // The close ends a body without a length; anything else is cut short.
      reader.put(std::string_view(static_cast<const char*>(c.buffer.data().data()),
                                  c.buffer.data().size()));
      reader.put_eof();
      co_return reader.done() || reader.failed() ? boost::system::error_code{} : ec;
    }
    if (ec) co_return ec;
  }
}

// Writes the request (`head`, then `body`) and reads the response on `stream` (plain TCP or TLS
// over it); one template, so the plain path pays no indirection. `sent`: set once the whole
// request is written.
template <typename Stream>
asio::awaitable<boost::system::error_code> write_and_read(Stream& stream, ClientConnection& c,
                                                          const std::string& head,
                                                          const std::string& body,
                                                          ResponseReader& reader,
                                                          ProgressDeadline& deadline, bool& sent) {
  boost::system::error_code write_ec;
  for (std::size_t written = 0; written < head.size() + body.size();) {
    deadline.arm();
    std::array<asio::const_buffer, 2> rest;
    if (written < head.size()) {
      rest = {asio::buffer(head.data() + written, head.size() - written), asio::buffer(body)};
    } else {
      const std::size_t in_body = written - head.size();
      rest = {asio::buffer(body.data() + in_body, body.size() - in_body), asio::const_buffer()};
    }
    auto [ec, n] = co_await stream.async_write_some(rest, kTuple);
    if (ec) {
      write_ec = ec;
      break;
    }
    written += n;
  }
  if (write_ec) {
    if (write_ec == beast::error::timeout || !closed_before_response(write_ec)) co_return write_ec;
    // The whole wait for the early answer is bounded, however it trickles in.
    deadline.arm_at_most(kEarlyResponseWait);
    const auto ec = co_await read_response(stream, c, reader, [] {});
    co_return ec || !reader.done() ? write_ec : boost::system::error_code{};
  }
  sent = true;
  co_return co_await read_response(stream, c, reader, [&deadline] { deadline.arm(); });
}

}  // namespace

asio::awaitable<Exchange> exchange(ClientConnection& c, const Url& u, const ClientRequest& req,
                                   Method method, const std::string& body, bool reused,
                                   std::chrono::milliseconds read_timeout,
                                   const telemetry::TraceContext* propagated) {
  const std::string head = request_head(u, req, method, body.size(), propagated);
  ProgressDeadline deadline(c.stream, req, read_timeout);
  ResponseReader reader(ResponseLimits{req.max_response_bytes, kMaxResponseHeadBytes},
                        method == Method::head);
  bool sent = false;
  boost::system::error_code ec =
      c.tls ? co_await write_and_read(*c.tls, c, head, body, reader, deadline, sent)
            : co_await write_and_read(c.stream, c, head, body, reader, deadline, sent);
  Exchange out;
  if (!ec && reader.failed()) {
    const ResponseProblem problem = reader.problem();
    if (problem != ResponseProblem::malformed) {
      // Without the query string, as every message of the client (it may hold a key).
      out.error.failure = AttemptFailure::too_large;
      out.error.message = reader.describe(req.url.substr(0, req.url.find('?')),
                                          req.max_response_setting.empty()
                                              ? "the HTTP client's limit for this request"
                                              : req.max_response_setting);
      co_return out;
    }
    ec = reader.error();
  }
  if (ec) {
    // Each names the setting to change.
    std::string timeout_text;
    if (!req.timeout) {
      timeout_text =
          "timed out: the server sent nothing and took nothing for "
          "global_http_read_timeout_seconds=" +
          seconds_text(read_timeout);
    } else if (!req.timeout_setting.empty()) {
      timeout_text = "no answer within " + req.timeout_setting + "=" + seconds_text(*req.timeout);
    } else {
      timeout_text = "timed out";
    }
    out.error =
        exchange_failure(ec, reused, !reader.got_some(), sent, method, req.url, timeout_text);
    co_return out;
  }
  // A response that came while the request was still being written ends the connection.
  out.keep_alive = reader.keep_alive() && sent;
  out.response = reader.take();
  c.stream.expires_never();
  co_return out;
}

}  // namespace gym::http
