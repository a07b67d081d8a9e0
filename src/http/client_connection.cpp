#include "http/client_connection.h"

#include "http/client_exchange.h"

#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace gym::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

bool is_ip_address(const std::string& host) {
  boost::system::error_code ec;
  (void)asio::ip::make_address(host, ec);
  return !ec;
}

void set_keepalive(tcp::socket& s, const PoolParams& params) {
  int fd = s.native_handle();
  int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &params.tcp_keepalive_idle_seconds, sizeof(int));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &params.tcp_keepalive_interval_seconds, sizeof(int));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &params.tcp_keepalive_probes, sizeof(int));
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

// Host name (or IP address) verification by OpenSSL as part of the chain check, the checks of
// ssl::host_name_verification; done this way a mismatch is reported as "hostname mismatch"
// rather than an unspecified verification error.
void verify_peer_name(SSL* handle, const std::string& host) {
  X509_VERIFY_PARAM* param = SSL_get0_param(handle);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  if (is_ip_address(host)) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  } else {
    SSL_set_tlsext_host_name(handle, host.c_str());  // SNI: names only (RFC 6066)
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
  }
}

// Why a handshake failed: the certificate verification result when verification failed (the
// OpenSSL reason: "unable to get local issuer certificate", "hostname mismatch", ...), else the
// TLS error itself.
std::string handshake_error(SSL* ssl_handle, const boost::system::error_code& ec) {
  std::string why = ec.message();
  const long verify = SSL_get_verify_result(ssl_handle);
  if (verify != X509_V_OK) {
    why += std::string(": ") + X509_verify_cert_error_string(verify);
  }
  return why;
}

// A failed handshake: refused by TLS itself (never retried), or a transport error under it.
TransportError handshake_failure(SSL* handle, const Destination& d,
                                 const boost::system::error_code& ec) {
  const std::string what = "TLS handshake with " + d.host + ":" + d.port + " failed: ";
  if (ec.category() == asio::error::get_ssl_category())
    return {AttemptFailure::tls, what + handshake_error(handle, ec)};
  return {closed_before_response(ec) ? AttemptFailure::refused_or_closed : AttemptFailure::other,
          what + (ec == beast::error::timeout ? std::string("timed out") : ec.message())};
}

asio::awaitable<std::optional<TransportError>> handshake(ClientConnection& c, const Destination& d,
                                                         ssl::context& tls_context) {
  c.tls.emplace(c.stream, tls_context);
  SSL* handle = c.tls->native_handle();
  verify_peer_name(handle, d.host);
  auto [ec] = co_await c.tls->async_handshake(ssl::stream_base::client, kTuple);
  if (ec) co_return handshake_failure(handle, d, ec);
  co_return std::nullopt;
}

}  // namespace

// A response of a few KB then arrives in one read (an empty flat_buffer reads 512 bytes at a
// time while it grows).
ClientConnection::ClientConnection(asio::any_io_executor ex) : stream(std::move(ex)) {
  buffer.reserve(8192);
}

std::unique_ptr<ssl::context> make_tls_context(const TlsFiles& files) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  ctx->set_verify_mode(ssl::verify_peer);
  boost::system::error_code ec;
  auto fail = [&](std::string_view what, const std::string& file) {
    throw TlsError("TLS: cannot load " + std::string(what) + " from " + file + ": " + ec.message());
  };
  if (files.ca_file.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec) spdlog::warn("TLS: cannot load the system trust store: {}", ec.message());
  } else if (ctx->load_verify_file(files.ca_file, ec); ec) {
    fail("the trusted CA certificates", files.ca_file);
  }
  if (!files.certificate_file.empty() || !files.key_file.empty()) {
    if (ctx->use_certificate_chain_file(files.certificate_file, ec); ec) {
      fail("the client certificate", files.certificate_file);
    }
    if (ctx->use_private_key_file(files.key_file, ssl::context::pem, ec); ec) {
      fail("the client key", files.key_file);
    }
    if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
      throw TlsError("TLS: the client key " + files.key_file + " does not match the certificate " +
                     files.certificate_file);
    }
  }
  return ctx;
}

asio::awaitable<std::optional<TransportError>> resolve(asio::any_io_executor ex, Destination& d) {
  if (d.endpoints) co_return std::nullopt;
  tcp::resolver resolver(ex);
  auto [ec, results] = co_await resolver.async_resolve(d.host, d.port, kTuple);
  if (ec)
    co_return TransportError{AttemptFailure::other,
                             "cannot resolve " + d.host + ": " + ec.message()};
  d.endpoints = results;
  co_return std::nullopt;
}

asio::awaitable<std::optional<TransportError>> connect(
    ClientConnection& c, const Destination& d, ssl::context* tls_context, const PoolParams& params,
    std::optional<std::chrono::milliseconds> timeout) {
  // The bound covers the TCP connect and the TLS handshake; exchange() re-arms the timer.
  const std::chrono::milliseconds limit = timeout.value_or(params.connect_timeout);
  if (limit.count() > 0) {
    c.stream.expires_after(limit);
  } else {
    c.stream.expires_never();
  }
  auto [ec, ep] = co_await c.stream.async_connect(*d.endpoints, kTuple);
  (void)ep;
  if (ec == beast::error::timeout)
    co_return TransportError{AttemptFailure::other,
                             "cannot connect to " + d.host + ":" + d.port + ": timed out after " +
                                 std::to_string(limit.count()) +
                                 " ms (global_http_connect_timeout_seconds)"};
  if (ec)
    co_return TransportError{
        closed_before_response(ec) ? AttemptFailure::refused_or_closed : AttemptFailure::other,
        "cannot connect to " + d.host + ":" + d.port + ": " + ec.message()};
  set_keepalive(c.stream.socket(), params);
  if (d.tls) co_return co_await handshake(c, d, *tls_context);
  co_return std::nullopt;
}

}  // namespace gym::http
