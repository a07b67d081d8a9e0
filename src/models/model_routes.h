#pragma once
// The routes of a model server object with `responses(req, params)` and
// `chat_completions(req, body)` members: servers::add_model_server_routes over a shared instance
// that the handlers keep alive.
#include "servers/model_server.h"

#include <memory>

namespace gym::models {

template <typename Server>
void add_model_routes(const servers::ServerContext& ctx, const std::shared_ptr<Server>& server,
                      http::Router& router) {
  servers::ModelServerHandlers handlers;
  handlers.responses = [server](http::Request& req, boost::json::object& params) {
    return server->responses(req, params);
  };
  handlers.chat_completions = [server](http::Request& req, boost::json::value& body) {
    return server->chat_completions(req, body);
  };
  servers::add_model_server_routes(ctx, router, std::move(handlers));
}

}  // namespace gym::models
