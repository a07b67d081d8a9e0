#include "http/response_reader.h"

#include <boost/asio/buffer.hpp>

#include <limits>

namespace gym::http {
namespace bhttp = boost::beast::http;

ResponseReader::ResponseReader(ResponseLimits limits, bool head_request)
    : limits_(limits), head_request_(head_request) {
  start();
}

void ResponseReader::start() {
  parser_.emplace();
  // Eager: one put() parses the head and as much of the body as it was given.
  parser_->eager(true);
  parser_->header_limit(static_cast<std::uint32_t>(
      std::min<std::size_t>(limits_.max_head_bytes, std::numeric_limits<std::uint32_t>::max())));
  if (limits_.max_body_bytes != 0) {
    parser_->body_limit(limits_.max_body_bytes);
  } else {
    parser_->body_limit(boost::none);
  }
  if (head_request_) parser_->skip(true);
}

void ResponseReader::fail(ResponseProblem problem, boost::system::error_code ec) {
  problem_ = problem;
  error_ = ec;
}

std::size_t ResponseReader::put(std::string_view data) {
  std::size_t used = 0;
  while (!done_ && !failed()) {
    const std::string_view rest = data.substr(used);
    if (!rest.empty()) got_some_ = true;
    boost::system::error_code ec;
    const std::size_t n = parser_->put(boost::asio::buffer(rest.data(), rest.size()), ec);
    used += n;
    if (parser_->is_header_done() && parser_->get().result_int() < 100) {
      // "000" to "099" parse as three digits but are no status; 0 would read as "no response".
      fail(ResponseProblem::malformed, bhttp::error::bad_status);
      break;
    }
    if (ec == bhttp::error::need_more) {
      // What is left is an unfinished head, chunk-size line or trailer section: it stays
      // buffered until its end arrives, so it must not grow without bound.
      if (rest.size() - n > limits_.max_head_bytes)
        fail(parser_->is_header_done() ? ResponseProblem::chunk_too_large
                                       : ResponseProblem::head_too_large,
             bhttp::error::header_limit);
      break;
    }
    if (ec == bhttp::error::body_limit) {
      fail(ResponseProblem::body_too_large, ec);
      break;
    }
    if (ec == bhttp::error::header_limit) {
      fail(parser_->is_header_done() ? ResponseProblem::chunk_too_large
                                     : ResponseProblem::head_too_large,
           ec);
      break;
    }
    if (ec) {
      fail(ResponseProblem::malformed, ec);
      break;
    }
    if (parser_->is_done()) {
      const int st = static_cast<int>(parser_->get().result_int());
      if (st / 100 != 1 || st == 101) {
        done_ = true;
        break;
      }
      // An interim answer: the final one follows on the same connection.
      if (++interim_ > kMaxInterimResponses) {
        fail(ResponseProblem::malformed, bhttp::error::bad_status);
        break;
      }
      start();
      continue;
    }
    if (n == 0) break;  // nothing more to parse until more bytes arrive
  }
  return used;
}

void ResponseReader::put_eof() {
  if (done_ || failed()) return;
  if (!parser_->got_some()) {
    fail(ResponseProblem::malformed, bhttp::error::end_of_stream);
    return;
  }
  boost::system::error_code ec;
  parser_->put_eof(ec);
  if (ec) {
    fail(ResponseProblem::malformed, ec);
  } else {
    done_ = parser_->is_done();
    if (!done_) fail(ResponseProblem::malformed, bhttp::error::partial_message);
  }
}

bool ResponseReader::head_done() const { return parser_->is_header_done(); }

int ResponseReader::status() const { return static_cast<int>(parser_->get().result_int()); }

bool ResponseReader::keep_alive() const {
  // After a 101 the connection speaks another protocol.
  return done_ && parser_->get().keep_alive() && status() != 101;
}

ClientResponse ResponseReader::take() {
  auto& res = parser_->get();
  ClientResponse r;
  r.status = static_cast<int>(res.result_int());
  r.headers.reserve(8);
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

std::string ResponseReader::describe(std::string_view from, std::string_view setting) const {
  const std::string url(from);
  switch (problem_) {
    case ResponseProblem::none:
      return {};
    case ResponseProblem::body_too_large:
      return "response body from " + url + " exceeded " + std::to_string(limits_.max_body_bytes) +
             " bytes (" + std::string(setting) + ")";
    case ResponseProblem::head_too_large:
      return "response header from " + url + " exceeded " + std::to_string(limits_.max_head_bytes) +
             " bytes";
    case ResponseProblem::chunk_too_large:
      return "a chunk-size line or the trailers of the response from " + url + " exceeded " +
             std::to_string(limits_.max_head_bytes) + " bytes";
    case ResponseProblem::malformed:
      if (interim_ > kMaxInterimResponses)
        return "response from " + url + " sent more than " + std::to_string(kMaxInterimResponses) +
               " interim (1xx) answers";
      return "malformed response from " + url + ": " + error_.message();
  }
  return {};
}

}  // namespace gym::http
