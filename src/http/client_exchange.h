#pragma once
// One request and its response on an open client connection: the request written, the response
// read, and when that failed, how (a connection closed before any response may be retried; a reused
// keep-alive connection closed under us is stale). Internal to the HTTP client. Loop thread only.
#include "http/client.h"
#include "http/client_connection.h"
#include "http/url.h"

#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace gym::http {

struct Exchange {
  std::optional<ClientResponse> response;  // none: `error` says why
  bool keep_alive = false;                 // the response lets the connection be reused
  TransportError error;
};

// Sends `method` `u.target` with `body` and the headers and cookies of `req` on `c`, and reads
// the response: within req.timeout when set, else with at most `read_timeout` (zero: no limit)
// between two steps of progress (a part of the request taken, a part of the response received).
// When the write fails because the server closed (a 413 before the whole body was sent), the
// response it sent before closing is read and returned. The response is read by ResponseReader
// (interim 1xx answers skipped), its body bounded by req.max_response_bytes: a longer one fails
// the exchange with AttemptFailure::too_large at once, before the rest is read. `reused`: `c`
// served earlier requests (a failure before any byte of the response then means the server had
// closed it). On failure `c` is to be closed; on success its deadline is cleared. `propagated`: the
// trace context sent as traceparent/tracestate/baggage (none: null).
boost::asio::awaitable<Exchange> exchange(ClientConnection& c, const Url& u,
                                          const ClientRequest& req, Method method,
                                          const std::string& body, bool reused,
                                          std::chrono::milliseconds read_timeout,
                                          const telemetry::TraceContext* propagated);

// The request line and header block of a request for `u` (HTTP/1.1): Host (unless the caller's
// headers have one), Content-Type application/json for a body (likewise), the caller's headers (a
// later one replaces an earlier one of the same name; Content-Length and Transfer-Encoding are the
// client's own), the cookies as one Cookie header, with `propagated` its traceparent and (when not
// empty) its tracestate and baggage in place of the caller's (W3C propagation), Content-Length as
// Beast's prepare_payload writes it, and the blank line. Written as one string rather than Beast
// fields: each field costs Beast an allocation and a pass through its serializer per request.
// Throws RequestError for a header that would end its line early.
std::string request_head(const Url& u, const ClientRequest& req, Method method,
                         std::size_t body_size,
                         const telemetry::TraceContext* propagated = nullptr);

// Refused, reset, or closed before a response (a TLS peer too that closed without
// close_notify). Retried for every call when the request was not wholly sent; after it was,
// external calls count a try (AttemptFailure::closed_after_request).
bool closed_before_response(const boost::system::error_code& ec);

}  // namespace gym::http
