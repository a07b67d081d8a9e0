#include "agents/simple_agent.h"

#include "core/json_text.h"
#include "python_compat/json.h"
#include "python_compat/utf8.h"
#include "servers/agent_server.h"
#include "servers/aggregate_metrics.h"
#include "servers/handler_span.h"
#include "servers/responses_api.h"

#include <spdlog/spdlog.h>
#include <boost/json.hpp>

namespace gym::agents {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Cookies;
using http::Request;
using http::Response;
using servers::DownstreamError;

namespace {

// Replaces cookies of the same name and adds new ones (a response's cookies over the last).
void update_cookies(Cookies& cookies, const Cookies& from) {
  for (const auto& [name, value] : from) {
    bool found = false;
    for (auto& c : cookies)
      if (c.first == name) c.second = value, found = true;
    if (!found) cookies.emplace_back(name, value);
  }
}

Cookies request_cookies(const Request& req) {
  Cookies out;
  for (const auto& h : req.headers)
    if (h.name.size() == 6 && strncasecmp(h.name.c_str(), "cookie", 6) == 0)
      update_cookies(out, http::parse_cookie_header(h.value));
  return out;
}

void set_cookies(Response& res, const Cookies& cookies) {
  for (const auto& [name, value] : cookies)
    res.headers.push_back({"Set-Cookie", name + "=" + value + "; Path=/; SameSite=lax"});
}

struct Agent {
  servers::ServerContext& ctx;
  std::string name;         // instance name
  std::string cookie_name;  // SimpleAgent___<instance>
  std::string resources;    // instance names of the references
  std::string model;
  std::int64_t max_steps = 0;  // 0 = unbounded
  bool skip_verification = false;
  double skip_verification_reward = 0.0;

  std::string url(const std::string& instance, std::string_view path) const {
    return ctx.url_of(instance) + std::string(path);
  }

  // `in`: the request being handled; the call joins its trace.
  asio::awaitable<http::ClientResponse> post(const Request& in, const std::string& instance,
                                             std::string_view path, std::string body,
                                             const Cookies& cookies) {
    http::ClientRequest r;
    r.url = url(instance, path);
    r.body = std::move(body);
    r.cookies = cookies;
    r.destination = instance;
    r.trace = in.trace;
    // The agent's own /v1/responses is the whole multi-turn loop, and the model server bounds its
    // endpoint calls itself (and names the endpoint when one hangs): neither answer is late just
    // because it takes longer than global_http_read_timeout_seconds.
    if (instance == name || instance == model) r.read_timeout = std::chrono::milliseconds(0);
    co_return co_await ctx.client->request(std::move(r));
  }

  // The row with its create params expanded to every field (as NeMo Gym's agent seeds and verifies:
  // docs/design/wire-compatibility.md#the-agents-loop), in the request's arena like every value a
  // handler builds: no heap traffic per rollout.
  static json::object expanded_row(const json::object& row) {
    json::object out(row, row.storage());
    out["responses_create_params"] =
        servers::expand_create_params(row.at("responses_create_params").as_object());
    return out;
  }

  asio::awaitable<Response> run(Request& req, json::value& body) {
    auto& row = body.as_object();
    Cookies c0 = request_cookies(req);
    json::object expanded = expanded_row(row);
    auto seeded = co_await post(req, resources, "/seed_session", core::render_json(expanded), c0);
    servers::require_success(seeded, resources, "/seed_session");
    Cookies cr = seeded.cookies;

    std::string params = core::render_json(row.at("responses_create_params"));
    auto turn = co_await post(req, name, "/v1/responses", std::move(params), cr);
    servers::require_success(turn, name, "/v1/responses");
    json::value response = turn.json(body.storage());

    if (skip_verification) {
      json::object out = std::move(expanded);
      out["response"] = std::move(response);
      out["reward"] = skip_verification_reward;
      out["verification_skipped"] = true;
      co_return Response::json(out);
    }
    json::object verify_body = std::move(expanded);
    verify_body["response"] = std::move(response);
    auto verified =
        co_await post(req, resources, "/verify", core::render_json(verify_body), turn.cookies);
    servers::require_success(verified, resources, "/verify");
    Response res;  // the verify answer, byte for byte
    res.body = std::move(verified.body);
    co_return res;
  }

  asio::awaitable<Response> responses(Request& req, json::value& body) {
    const json::storage_ptr arena = body.storage();
    json::object params = std::move(body.as_object());
    Cookies cr = request_cookies(req);
    Cookies cm;
    json::array inputs(arena);
    if (auto* in = params.if_contains("input"); in && in->is_string()) {
      json::object message(arena);
      message["role"] = "user";
      message["content"] = in->get_string();
      inputs.push_back(std::move(message));
    } else if (in && in->is_array()) {
      inputs = in->get_array();
    }
    json::array outputs(arena);
    json::value usage = nullptr;
    json::value last(arena);
    for (std::int64_t step = 1;; ++step) {
      json::array turn_input(inputs, arena);
      for (const auto& o : outputs) turn_input.push_back(o);
      params["input"] = std::move(turn_input);
      auto answer = co_await post(req, model, "/v1/responses", core::render_json(params), cm);
      servers::require_success(answer, model, "/v1/responses");
      json::value model_response = answer.json(arena);
      if (auto problem = servers::response_problem(model_response))
        throw std::runtime_error("invalid Response from " + model + ": " + *problem);
      cm = answer.cookies;  // replaced, not merged
      auto& mr = model_response.as_object();
      const auto& turn_output = mr.at("output").as_array();
      for (const auto& item : turn_output) outputs.push_back(item);
      usage =
          servers::accumulate_usage(usage, mr.contains("usage") ? mr.at("usage") : json::value());
      last = model_response;  // copied into the arena: `mr` is still read below
      if (auto* inc = mr.if_contains("incomplete_details"); inc && !inc->is_null()) break;

      std::vector<const json::object*> calls;
      bool has_message = false;
      for (const auto& item : turn_output) {
        const auto& o = item.as_object();
        auto type = o.at("type").as_string();
        if (type == "function_call") calls.push_back(&o);
        if (type == "message" && o.contains("role") && o.at("role") == "assistant")
          has_message = true;
      }
      if (calls.empty() && has_message) break;
      // Copies: `outputs` grows while the calls run.
      std::vector<json::object> pending;
      for (const auto* c : calls) pending.push_back(*c);
      for (const auto& call : pending) {
        std::string tool_output;
        // Arguments are read as Python's json.loads reads them (NaN, Infinity, duplicate keys).
        const auto* args_text = call.if_contains("arguments");
        json::value args;
        std::string parse_error;
        try {
          if (!args_text || !args_text->is_string())
            throw std::runtime_error("the arguments are not a JSON text");
          args = python_compat::py_json_loads(args_text->get_string());
        } catch (const std::exception& e) {
          parse_error = e.what();
        }
        if (!parse_error.empty()) {
          json::object err;
          err["error"] = "Invalid tool call arguments: " + parse_error;
          tool_output = core::render_json(err);
        } else {
          std::string tool = call.contains("name") ? std::string(call.at("name").as_string()) : "";
          auto r = co_await post(req, resources, "/" + tool, core::render_json(args), cr);
          tool_output = python_compat::utf8_replace_invalid(r.body);
          if (!r.cookies.empty()) cr = r.cookies;
        }
        json::object out_item(arena);
        out_item["type"] = "function_call_output";
        out_item["call_id"] = call.contains("call_id") ? call.at("call_id") : json::value("");
        out_item["output"] = std::move(tool_output);
        outputs.push_back(std::move(out_item));
      }
      if (max_steps > 0 && step >= max_steps) break;
    }
    auto& result = last.as_object();
    result["output"] = std::move(outputs);
    result["usage"] = std::move(usage);
    Response res = Response::json(result);
    set_cookies(res, cr);
    set_cookies(res, cm);
    co_return res;
  }
};

std::string reference_name(const json::object& cfg, const char* key, const char* type) {
  const auto* ref = cfg.if_contains(key);
  if (!ref || !ref->is_object() || !ref->as_object().contains("name"))
    throw core::ConfigError(std::string("simple_agent needs `") + key + ": {type: " + type +
                            ", name: <instance>}`");
  return std::string(ref->as_object().at("name").as_string());
}

}  // namespace

void register_simple_agent(servers::Registry& registry) {
  registry.add({
      "responses_api_agents",
      "simple_agent",
      "SimpleAgent",
      [](servers::ServerContext& ctx, http::Router& router) {
        const auto& cfg = ctx.instance.config;
        auto agent = std::make_shared<Agent>(
            Agent{ctx, ctx.instance.name, "SimpleAgent___" + ctx.instance.name,
                  reference_name(cfg, "resources_server", "resources_servers"),
                  reference_name(cfg, "model_server", "responses_api_models")});
        agent->max_steps =
            core::get_int(cfg, "max_steps", 0, 0, std::numeric_limits<std::int64_t>::max());
        agent->skip_verification = core::get_bool(cfg, "skip_verification", false);
        agent->skip_verification_reward =
            core::get_double(cfg, "skip_verification_reward", 0.0, -1e300, 1e300);
        servers::add_agent_base_routes(router);

        auto guarded = [agent](auto method) {
          return [agent, method](Request& req, json::value& body) -> asio::awaitable<Response> {
            try {
              co_return co_await ((*agent).*method)(req, body);
            } catch (const DownstreamError& e) {
              co_return servers::downstream_failure(agent->cookie_name, e);
            }
          };
        };
        servers::add_run_route(ctx, router, guarded(&Agent::run));
        router.post(
            "/v1/responses",
            http::json_route([&ctx, responses = guarded(&Agent::responses)](
                                 Request& req, json::value& body) -> asio::awaitable<Response> {
              servers::HandlerSpan span(ctx, telemetry::SpanGroup::agent, "gym.agent.responses",
                                        req);
              co_return co_await servers::answer_in(span, responses, req, body);
            }));
        router.post(
            "/aggregate_metrics",
            http::json_route([agent](Request& req, json::value& body) -> asio::awaitable<Response> {
              auto r = co_await agent->post(req, agent->resources, "/aggregate_metrics",
                                            core::render_json(body), request_cookies(req));
              // A resources server written for an older NeMo Gym has no /aggregate_metrics:
              // NeMo Gym's default computation stands in, and a header says so (the collector
              // prints it) rather than failing a run whose rollouts are all there.
              const auto* rows =
                  body.is_object() ? body.get_object().if_contains("verify_responses") : nullptr;
              if ((r.status == 404 || r.status == 405) && rows && rows->is_array()) {
                auto res = Response::json(servers::compute_aggregate_metrics(rows->get_array()));
                const std::string why = agent->resources + " answered HTTP " +
                                        std::to_string(r.status) + " to POST /aggregate_metrics";
                spdlog::warn("{}; computed NeMo Gym's default aggregate metrics instead", why);
                // rollouts/aggregate.cpp reads it
                res.headers.push_back({"X-Gym-Default-Aggregate-Metrics", why});
                co_return res;
              }
              Response res;
              res.status = r.status;
              res.body = std::move(r.body);
              co_return res;
            }));
      },
  });
}

}  // namespace gym::agents
