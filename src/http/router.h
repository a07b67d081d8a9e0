#pragma once
// Routes requests to handlers by method and path. Templates are exact paths ("/verify") or
// the catch-all "/{path}" (tool routes); exact paths win.
#include "http/message.h"
#include "http/schema.h"

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace gym::http {

// Handlers may await I/O (downstream calls). An exception becomes a 500 JSON response.
using Handler = std::function<boost::asio::awaitable<Response>(Request&)>;
using JsonHandler = std::function<boost::asio::awaitable<Response>(Request&, boost::json::value&)>;

// Wraps a handler of a JSON body: malformed JSON -> 400, schema violations -> 422.
Handler json_route(JsonHandler handler, std::shared_ptr<const Schema> schema = nullptr);

// An error a handler throws to answer with a status of its own instead of 500.
class StatusError : public std::runtime_error {
 public:
  StatusError(int status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

// The body for an exception escaping a handler: the JSON string "<error type>: <message>", with
// the status of a StatusError, else 500.
Response exception_response(const std::exception& e);
// The exception's class name without namespaces ("runtime_error", "DownstreamError").
std::string exception_type(const std::exception& e);

class Router {
 public:
  void add(Method method, std::string path_template, Handler handler);
  void get(std::string path, Handler h) { add(Method::get, std::move(path), std::move(h)); }
  void post(std::string path, Handler h) { add(Method::post, std::move(path), std::move(h)); }

  struct Match {
    const Handler* handler = nullptr;  // null: 404, or 405 when method_not_allowed
    std::string_view route;            // matched template
    bool method_not_allowed = false;
  };
  Match match(Method method, std::string_view path) const;

 private:
  struct Entry {
    std::string path;
    std::unordered_map<int, Handler> by_method;
  };
  Match lookup(const Entry& e, Method method) const;

  std::unordered_map<std::string, std::unique_ptr<Entry>> exact_;
  std::unique_ptr<Entry> catch_all_;
};

}  // namespace gym::http
