#pragma once
// Opening the client's connections (docs/reference/http-client.md#behaviour): the name resolved
// once per destination, a TCP connect with keep-alive socket options and, for https, the TLS
// handshake (TLS 1.2 or newer, the peer's certificate and host name verified against the system
// trust store). Internal to the HTTP client (client.cpp, client_exchange.cpp): Beast types stay out
// of the public headers. Loop thread only.
#include "http/client.h"
#include "http/retry_policy.h"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace boost::asio::ssl {
class context;
}

namespace gym::http {

// One host:port over http or https, with its addresses once they are resolved.
struct Destination {
  bool tls = false;
  std::string host, port;
  std::optional<boost::asio::ip::tcp::resolver::results_type> endpoints;
};

// A client connection: TCP, and TLS over it for https.
struct ClientConnection {
  explicit ClientConnection(boost::asio::any_io_executor ex);
  boost::beast::tcp_stream stream;
  // https only: TLS over `stream` (declared after it, so destroyed first). Empty for http,
  // whose connections pay nothing for TLS.
  std::optional<boost::beast::ssl_stream<boost::beast::tcp_stream&>> tls;
  boost::beast::flat_buffer buffer;  // kept across the requests of the connection
};

// Why an attempt got no response, and the message its caller sees.
struct TransportError {
  AttemptFailure failure = AttemptFailure::other;
  std::string message;
};

// The client side of TLS (docs/reference/telemetry.md#exporting-over-https): TLS 1.2 or newer, the
// peer's certificate verified against the system trust store (OpenSSL's default paths, so
// SSL_CERT_FILE and SSL_CERT_DIR work as in any OpenSSL program), or against `files.ca_file` alone
// when it is set; with `files.certificate_file` and `key_file`, this client's certificate for
// servers that ask for one. Throws TlsError naming the file that cannot be loaded.
std::unique_ptr<boost::asio::ssl::context> make_tls_context(const TlsFiles& files = {});

// Resolves the name of `d` unless it already was. Returns the error ("cannot resolve <host>:
// ...") when that failed.
boost::asio::awaitable<std::optional<TransportError>> resolve(boost::asio::any_io_executor ex,
                                                              Destination& d);

// Connects `c` to the resolved `d` within `timeout` (none: params.connect_timeout, where zero
// is no limit; the bound covers the TLS handshake too), sets the TCP keep-alive
// options of `params` and TCP_NODELAY, and for https shakes hands over `tls_context`. Returns the
// error when that failed; `c` is then to be closed.
boost::asio::awaitable<std::optional<TransportError>> connect(
    ClientConnection& c, const Destination& d, boost::asio::ssl::context* tls_context,
    const PoolParams& params, std::optional<std::chrono::milliseconds> timeout);

}  // namespace gym::http
