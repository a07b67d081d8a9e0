// The HTTP request path without sockets: raw bytes go through Beast's request parser with the
// server's limits, then the session cookie, the router and the JSON routes of the servers
// (json_route: parse, schema validation, handler), as HttpServer's connection loop does; the
// response is serialized. Anything a client sends must end in a response or a rejected head.
#include "http/message.h"
#include "http/router.h"
#include "http/schema.h"
#include "http/server.h"
#include "http/session_cookie.h"
#include "http/verb.h"
#include "servers/agent_server.h"
#include "servers/model_server.h"
#include "servers/resources_server.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string_view>

namespace {
namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using gym::http::Request;
using gym::http::Response;

// Small limits so the fuzzer reaches the 413 and 431 paths with small inputs.
constexpr std::size_t kMaxHeaderBytes = 4096;
constexpr std::size_t kMaxBodyBytes = 16384;

asio::awaitable<Response> echo_json(Request&, boost::json::value& body) {
  co_return Response::json(body);
}

gym::http::Router make_router() {
  gym::http::Router router;
  // The model routes' spans read the context's tracer: none here.
  static const boost::json::object no_config;
  static gym::servers::ServerContext context(no_config, gym::core::ServerInstance{});
  gym::servers::ModelServerHandlers model;
  model.responses = [](Request&, boost::json::object& params) -> asio::awaitable<Response> {
    co_return Response::json(params);
  };
  model.chat_completions = echo_json;
  gym::servers::add_model_server_routes(context, router, std::move(model));
  router.post("/verify", gym::http::json_route(echo_json, gym::servers::verify_request_schema()));
  router.post("/run", gym::http::json_route(echo_json, gym::servers::run_request_schema()));
  router.post("/aggregate_metrics",
              gym::http::json_route(echo_json, gym::servers::aggregate_metrics_request_schema()));
  router.post("/seed_session", gym::http::json_route(echo_json));
  router.post("/{path}", gym::http::json_route(echo_json));
  router.get("/health", [](Request&) -> asio::awaitable<Response> {
    co_return Response::json(boost::json::object{{"status", "ok"}});
  });
  return router;
}

struct Fixture {
  gym::http::Router router = make_router();
  gym::http::SessionCookie cookie{"SimpleResourcesServer___mcqa", std::string(64, 'k')};
  asio::io_context io;
};

Fixture& fixture() {
  static Fixture instance;
  return instance;
}

// What HttpServer's handle() does with a parsed request: session, route, handler or 404/405.
Response handle(Fixture& f, Request& req) {
  const std::string_view cookie_value = req.cookie(f.cookie.name());
  std::optional<std::string> id;
  if (!cookie_value.empty()) id = f.cookie.verify(cookie_value);
  req.session_id = id ? *id : "fresh-session";
  auto match = f.router.match(req.method, req.path);
  req.route = match.handler ? match.route : std::string_view();
  if (!match.handler) {
    return Response::detail(match.method_not_allowed ? 405 : 404,
                            match.method_not_allowed ? "Method Not Allowed" : "Not Found");
  }
  Response res;
  asio::co_spawn(f.io, (*match.handler)(req), [&](std::exception_ptr e, Response r) {
    if (!e) {
      res = std::move(r);
      return;
    }
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {  // the server answers a 500, as here
      res = gym::http::exception_response(ex);
    }
  });
  f.io.restart();
  f.io.run();
  res.headers.push_back({"Set-Cookie", f.cookie.set_cookie_header(req.session_id)});
  return res;
}

void serialize(const Response& res) {
  bhttp::response<bhttp::string_body> out{static_cast<bhttp::status>(res.status), 11};
  out.set(bhttp::field::content_type, res.content_type);
  for (const auto& h : res.headers) out.insert(h.name, h.value);
  out.body() = res.body;
  out.prepare_payload();
  std::ostringstream text;
  text << out;
}

// The next request of `rest` (its bytes consumed), parsed as the server parses a connection's
// bytes; none when they end early or the parser rejects them (the server's 400/413/431).
std::optional<bhttp::request<bhttp::string_body>> next_request(asio::const_buffer& rest) {
  bhttp::request_parser<bhttp::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(kMaxHeaderBytes));
  parser.body_limit(kMaxBodyBytes);
  parser.eager(true);
  for (;;) {
    boost::system::error_code ec;
    const std::size_t used = parser.put(rest, ec);
    rest += used;
    if (parser.is_done()) return parser.release();
    if (ec == bhttp::error::need_more || rest.size() == 0) {
      parser.put_eof(ec);  // the client closed: complete, or a partial message
      if (!ec && parser.is_done()) return parser.release();
      return std::nullopt;
    }
    if (ec || used == 0) return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto& f = fixture();
  // Keep-alive: several requests may follow each other in the bytes, as on one connection.
  asio::const_buffer rest(data, size);
  while (rest.size() > 0) {
    auto message = next_request(rest);
    if (!message) return 0;
    Request req;
    req.method = gym::http::to_method(message->method());
    req.target = std::string(message->target());
    req.path = gym::http::routing_path(req.target);
    for (const auto& field : *message)
      req.headers.push_back({std::string(field.name_string()), std::string(field.value())});
    req.body = std::move(message->body());
    serialize(handle(f, req));
    if (!message->keep_alive()) return 0;
  }
  return 0;
}
