#pragma once
// Reading one HTTP/1.1 response from the bytes of a connection as they arrive, without any I/O:
// the client's exchange feeds it what it reads from its socket, the orchestrator's readiness
// probe what it receives, the fuzz target any bytes at all. One parser for all three, so what the
// fuzzer proves holds for the client.
//
// Interim answers (1xx other than 101 Switching Protocols: 100 Continue, 103 Early Hints) are
// skipped, as RFC 9110 asks of a client, and the final response that follows is read. Every part
// of what a server sends is bounded, so an endless or hostile answer costs a bounded amount of
// memory: the status line and headers, each chunk-size line and the trailers by
// ResponseLimits::max_head_bytes, the body (declared by Content-Length, or received chunk by
// chunk or until the close) by max_body_bytes, the interim answers by kMaxInterimResponses.
#include "http/client.h"

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gym::http {

struct ResponseLimits {
  std::uint64_t max_body_bytes = kDefaultMaxResponseBytes;  // 0: no limit
  std::size_t max_head_bytes = kMaxResponseHeadBytes;
};

// Why a response could not be read.
enum class ResponseProblem {
  none,
  body_too_large,   // the body, declared or received, is longer than max_body_bytes
  head_too_large,   // the status line and headers are longer than max_head_bytes
  chunk_too_large,  // a chunk-size line or the trailers are longer than max_head_bytes
  malformed,        // not HTTP, a bad chunk, too many interim answers, cut short by the close
};

class ResponseReader {
 public:
  // More interim answers than this before the final one is not a server worth waiting for.
  static constexpr int kMaxInterimResponses = 32;

  // `head_request`: the response to a HEAD, which has headers only whatever they declare.
  explicit ResponseReader(ResponseLimits limits = {}, bool head_request = false);

  // Parses what it can of `data`, the bytes received and not consumed yet, and returns how many
  // it consumed; the rest must be passed again, with more after it. Once done() or failed(),
  // consumes nothing more (bytes after a response are the next response's on a kept connection).
  std::size_t put(std::string_view data);
  // The server closed the connection: completes a body that ends with the close; any other
  // response not complete yet fails (malformed, error() end_of_stream or partial_message).
  void put_eof();

  bool done() const { return done_; }
  bool failed() const { return problem_ != ResponseProblem::none; }
  ResponseProblem problem() const { return problem_; }
  // Beast's reason when failed(): body_limit, header_limit, bad_chunk, partial_message, ...
  const boost::system::error_code& error() const { return error_; }
  // A byte of a response arrived (of an interim one too): a failure after it is not a stale
  // connection.
  bool got_some() const { return got_some_; }
  // The head of the final response is complete: its status is known.
  bool head_done() const;
  int status() const;  // head_done() only

  // done() only: the connection may carry the next request (keep-alive, not a 101).
  bool keep_alive() const;
  // done() only: the status, headers, cookies (from Set-Cookie, in order) and body, moved out.
  ClientResponse take();

  // What failed(), for an error message: "response body from <from> exceeded <n> bytes
  // (<setting>)", "response header from <from> exceeded <n> bytes", ... `from`: the URL without
  // its query string; `setting`: what sets max_body_bytes.
  std::string describe(std::string_view from, std::string_view setting) const;

 private:
  void start();
  void fail(ResponseProblem problem, boost::system::error_code ec);

  ResponseLimits limits_;
  bool head_request_;
  std::optional<boost::beast::http::response_parser<boost::beast::http::string_body>> parser_;
  int interim_ = 0;
  bool got_some_ = false;
  bool done_ = false;
  ResponseProblem problem_ = ResponseProblem::none;
  boost::system::error_code error_;
};

}  // namespace gym::http
