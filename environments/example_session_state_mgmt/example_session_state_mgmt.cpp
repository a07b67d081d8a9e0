#include "python_compat/errors.h"
#include "python_compat/json_equal.h"
#include "servers/resources_server.h"
#include "servers/session_table.h"

#include <boost/json.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace gym::environments {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;
using http::Schema;

namespace {

// Counters by session id. Upstream keeps a plain dict that only grows; here the sessions are
// bounded (servers::SessionLimits), so opening sessions cannot grow the server without limit.
class CounterStore {
 public:
  explicit CounterStore(servers::SessionLimits limits) : counters_(limits.ttl, limits.capacity) {}

  // dict.setdefault(session, initial): an existing counter is left unchanged, and a session
  // that expired starts over (every other use of it fails: servers::SessionEndedError).
  void seed(const std::string& session, std::int64_t initial) {
    std::lock_guard lock(mutex_);
    counters_.seed(session, initial, Clock::now());
  }

  // The counter (created at 0) plus `delta`.
  void add(const std::string& session, std::int64_t delta) {
    std::lock_guard lock(mutex_);
    auto& counter = counters_.get_or_insert(session, 0, Clock::now());
    std::int64_t sum = 0;
    if (__builtin_add_overflow(counter, delta, &sum))
      throw python_compat::OverflowError("the counter leaves the 64-bit range gym-cpp supports");
    counter = sum;
  }

  std::int64_t get_or_create(const std::string& session) {
    std::lock_guard lock(mutex_);
    return counters_.get_or_insert(session, 0, Clock::now());
  }

  std::optional<std::int64_t> find(const std::string& session) {
    std::lock_guard lock(mutex_);
    return counters_.find(session, Clock::now());
  }

 private:
  using Clock = servers::SessionTable<std::int64_t>::Clock;
  std::mutex mutex_;
  servers::SessionTable<std::int64_t> counters_;
};

// A validated int field; ints beyond 64 bits (Python has no limit) are refused.
std::int64_t int_field(const json::object& body, std::string_view key) {
  const auto& v = body.at(key);
  if (v.is_uint64())
    throw python_compat::OverflowError(std::string(key) + " exceeds the 64-bit range");
  return v.get_int64();
}

std::shared_ptr<const Schema> int_body(std::string field) {
  return std::make_shared<const Schema>(
      Schema::object_of({{std::move(field), Schema::of(Schema::Kind::integer), true}}));
}

}  // namespace

// StatefulCounterResourcesServer (README.md here): a counter per session, seeded from the row's
// `initial_count`, changed by the tools; verify rewards 1.0 when it equals `expected_count`. State
// is per process: serve it with num_workers <= 1.
// Registered by the generated builtin_environments.cpp (environments/CMakeLists.txt).
servers::Environment example_session_state_mgmt_environment() {
  return {
      "example_session_state_mgmt",
      "StatefulCounterResourcesServer",
      [](servers::ServerContext& ctx, http::Router& router) -> servers::VerifyRoute {
        auto store =
            std::make_shared<CounterStore>(servers::SessionLimits::from_config(ctx.global));
        router.post("/seed_session",
                    http::json_route(
                        [store](Request& req, json::value& body) -> asio::awaitable<Response> {
                          auto initial = int_field(body.get_object(), "initial_count");
                          store->seed(req.session_id, initial);
                          co_return Response::json(json::object{});
                        },
                        int_body("initial_count")));
        router.post("/increment_counter",
                    http::json_route(
                        [store](Request& req, json::value& body) -> asio::awaitable<Response> {
                          store->add(req.session_id, int_field(body.get_object(), "count"));
                          co_return Response::json(json::object{{"success", true}});
                        },
                        int_body("count")));
        // No body model upstream: the body is not even parsed.
        router.post("/get_counter_value", [store](Request& req) -> asio::awaitable<Response> {
          co_return Response::json(json::object{{"count", store->get_or_create(req.session_id)}});
        });
        auto verify_schema = servers::verify_request_schema(
            {{"expected_count", Schema::of(Schema::Kind::integer), true}});
        return {[store](Request& req, json::value& body) -> asio::awaitable<Response> {
                  const auto& row = body.get_object();
                  auto counter = store->find(req.session_id);
                  bool equal = counter && python_compat::json_equal(
                                              row.at("expected_count"), json::value(*counter),
                                              python_compat::BoolRule::as_integers);
                  co_return Response::json(servers::verify_response(row, equal ? 1.0 : 0.0));
                },
                verify_schema};
      },
  };
}

}  // namespace gym::environments
