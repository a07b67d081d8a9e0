#include "http/router.h"

#include "core/json_text.h"

#include <boost/core/demangle.hpp>
#include <boost/json.hpp>

#include <stdexcept>
#include <typeinfo>

namespace gym::http {
namespace json = boost::json;

constexpr std::string_view kCatchAll = "/{path}";

void Router::add(Method method, std::string path_template, Handler handler) {
  std::unique_ptr<Entry>* slot = nullptr;
  if (path_template == kCatchAll) {
    slot = &catch_all_;
  } else {
    if (path_template.find('{') != std::string::npos)
      throw std::invalid_argument("unsupported route template: " + path_template);
    slot = &exact_[path_template];
  }
  if (!*slot) {
    *slot = std::make_unique<Entry>();
    (*slot)->path = path_template;
  }
  (*slot)->by_method[static_cast<int>(method)] = std::move(handler);
}

Router::Match Router::lookup(const Entry& e, Method method) const {
  Match m;
  m.route = e.path;
  auto it = e.by_method.find(static_cast<int>(method));
  if (it == e.by_method.end()) {
    m.method_not_allowed = true;
  } else {
    m.handler = &it->second;
  }
  return m;
}

Router::Match Router::match(Method method, std::string_view path) const {
  if (auto it = exact_.find(std::string(path)); it != exact_.end())
    return lookup(*it->second, method);
  // The catch-all covers one path segment, as FastAPI's "/{path}" does.
  if (catch_all_ && path.size() > 1 && path.find('/', 1) == std::string_view::npos)
    return lookup(*catch_all_, method);
  return {};
}

std::string exception_type(const std::exception& e) {
  std::string type = boost::core::demangle(typeid(e).name());
  if (auto colon = type.rfind("::"); colon != std::string::npos) type = type.substr(colon + 2);
  return type;
}

Response exception_response(const std::exception& e) {
  const auto* with_status = dynamic_cast<const StatusError*>(&e);
  return Response::json(json::string(exception_type(e) + ": " + e.what()),
                        with_status ? with_status->status() : 500);
}

Handler json_route(JsonHandler handler, std::shared_ptr<const Schema> schema) {
  return [handler = std::move(handler),
          schema = std::move(schema)](Request& req) -> boost::asio::awaitable<Response> {
    // The body lives in a request-scoped arena: handlers use it during the request only (a copy
    // kept beyond it must be made with its own storage, e.g. json::value(v, {})).
    json::monotonic_resource arena(req.body.size() * 2 + 1024);
    json::storage_ptr storage(&arena);
    json::value body(storage);
    if (!req.body.empty()) {
      boost::system::error_code ec;
      std::size_t used = 0;
      body = core::parse_json(req.body, ec, &used, storage);
      if (ec) {
        co_return Response::detail(400, json::string("Malformed JSON body: " + ec.message() +
                                                     " at byte " + std::to_string(used)));
      }
    } else if (schema) {
      json::array missing;
      json::object e;
      e["type"] = "missing";
      e["loc"] = json::array{"body"};
      e["msg"] = "Field required";
      e["input"] = nullptr;
      missing.push_back(std::move(e));
      co_return Response::detail(422, missing);
    }
    if (schema) {
      auto errors = validate_body(*schema, body);
      if (!errors.empty()) co_return Response::detail(422, errors);
    }
    co_return co_await handler(req, body);
  };
}

}  // namespace gym::http
