// The C++ port of environments/python_example (same routes, bodies and rewards), so
// bench/RESULTS.md can show what porting a Python environment to C++ buys. Differences, all in
// the calculator's error cases: an int result beyond 64 bits is an error here (Python has no
// limit), and every malformed expression gets one message (Python's SyntaxError text varies).
#include "calculator/expression.h"
#include "python_compat/re.h"
#include "python_compat/str.h"
#include "servers/resources_server.h"
#include "servers/responses_api.h"
#include "servers/session_table.h"

#include <boost/json.hpp>

#include <cmath>
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

// Calculator calls per session, bounded like every session store (servers::SessionLimits). A
// request without a session (no id) keeps nothing, as a fresh Starlette session would.
class CallCounts {
 public:
  explicit CallCounts(servers::SessionLimits limits) : counts_(limits.ttl, limits.capacity) {}
  void reset(const std::string& session) {
    if (session.empty()) return;
    std::lock_guard lock(mutex_);
    counts_.set(session, 0, Clock::now());
  }
  void count(const std::string& session) {
    if (session.empty()) return;
    std::lock_guard lock(mutex_);
    ++counts_.get_or_insert(session, 0, Clock::now());
  }
  std::int64_t of(const std::string& session) {
    if (session.empty()) return 0;
    std::lock_guard lock(mutex_);
    return counts_.find(session, Clock::now()).value_or(0);
  }

 private:
  using Clock = servers::SessionTable<std::int64_t>::Clock;
  std::mutex mutex_;
  servers::SessionTable<std::int64_t> counts_;
};

// A float that is a whole number is answered as an int, as the Python server does.
json::value to_json(const calculator::Number& n) {
  if (const auto* i = std::get_if<std::int64_t>(&n)) return *i;
  const double d = std::get<double>(n);
  if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.2e18)
    return static_cast<std::int64_t>(d);
  return d;
}

json::value calculate(const json::value& body) {
  const auto* expression = body.is_object() ? body.as_object().if_contains("expression") : nullptr;
  if (expression == nullptr || !expression->is_string())
    return json::object{
        {"error", R"(give the expression as a string, e.g. {"expression": "12*7"})"}};
  try {
    return json::object{{"result", to_json(calculator::evaluate(expression->as_string()))}};
  } catch (const calculator::ExpressionError& e) {
    return json::object{{"error", e.what()}};
  }
}

// The last number of `text` (Python's \d: any Unicode decimal digit; thousands separators).
std::optional<double> last_number(const std::string& text) {
  static const python_compat::PyRegex number(R"(-?\d+(?:,\d{3})*(?:\.\d+)?)");
  auto matches = number.finditer(text);
  if (matches.empty()) return std::nullopt;
  return python_compat::py_float(python_compat::py_replace(matches.back().group(), ",", ""));
}

}  // namespace

// PythonExampleResourcesServer, in C++ (environments/python_example/README.md has the routes).
// Registered by the generated builtin_environments.cpp (environments/CMakeLists.txt).
servers::Environment calculator_environment() {
  return {
      "calculator",
      "CalculatorResourcesServer",
      [](servers::ServerContext& ctx, http::Router& router) -> servers::VerifyRoute {
        auto counts = std::make_shared<CallCounts>(servers::SessionLimits::from_config(ctx.global));
        router.post("/seed_session", [counts](Request& req) -> asio::awaitable<Response> {
          counts->reset(req.session_id);
          co_return Response::json(json::object{});
        });
        router.post("/calculate",
                    http::json_route(
                        [counts](Request& req, json::value& body) -> asio::awaitable<Response> {
                          counts->count(req.session_id);
                          co_return Response::json(calculate(body));
                        },
                        nullptr));
        auto schema = servers::verify_request_schema(
            {{"expected_answer", Schema::of(Schema::Kind::any), true}});
        return {[counts](Request& req, json::value& body) -> asio::awaitable<Response> {
                  const auto& row = body.as_object();
                  const auto& expected = row.at("expected_answer");
                  if (!expected.is_number())
                    co_return Response::detail(422, "expected_answer must be a number");
                  const auto extracted = last_number(
                      servers::assistant_text(row.at("response").at("output").as_array()));
                  const bool correct =
                      extracted && std::fabs(*extracted - expected.to_number<double>()) <= 1e-9;
                  auto answer = servers::verify_response(row, correct ? 1.0 : 0.0);
                  answer["expected_answer"] = expected;
                  answer["extracted_answer"] = extracted ? json::value(*extracted) : json::value();
                  answer["calculator_calls"] = counts->of(req.session_id);
                  co_return Response::json(std::move(answer));
                },
                schema};
      },
  };
}

}  // namespace gym::environments
