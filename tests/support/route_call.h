#pragma once
// Test support, header-only: one request through a Router's handler on a private event loop, no
// socket (for route logic; what crosses the wire is tested with real servers). Any test binary
// that links gym_http can include it (link gym_test_headers for the include path).
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <stdexcept>
#include <string>

#include "http/router.h"

namespace gym::test {

// The handler's response; an exception it throws is rethrown here.
inline http::Response call_route(const http::Router& router, http::Method method,
                                 const std::string& path, const std::string& body = "") {
  auto match = router.match(method, path);
  if (match.handler == nullptr) throw std::runtime_error("no route " + path);
  http::Request req;
  req.method = method;
  req.path = path;
  req.body = body;
  boost::asio::io_context io;
  auto fut = boost::asio::co_spawn(io, (*match.handler)(req), boost::asio::use_future);
  io.run();
  return fut.get();
}

}  // namespace gym::test
