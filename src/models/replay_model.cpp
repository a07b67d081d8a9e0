#include "models/replay_model.h"

#include "servers/model_server.h"

#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <memory>

namespace gym::models {
namespace asio = boost::asio;
namespace json = boost::json;
using http::Request;
using http::Response;

namespace {

std::string key_prefix(const core::ServerInstance& instance) {
  return instance.name + "." + instance.server_type + "." + instance.impl;
}

std::vector<std::string> listed_paths(const json::object& cfg, const std::string& key) {
  const auto* v = cfg.if_contains("rollouts_jsonl_fpaths");
  std::vector<std::string> out;
  if (!v || v->is_null()) return out;
  if (v->is_string()) {
    out.emplace_back(v->get_string());
    return out;
  }
  const auto* list = v->if_array();
  bool ok = list != nullptr;
  if (ok)
    for (const auto& item : *list) {
      if (!item.is_string()) {
        ok = false;
        break;
      }
      out.emplace_back(item.get_string());
    }
  if (!ok)
    throw core::ConfigError("config error: " + key +
                            " must be a list of rollouts file paths, e.g. ++" + key +
                            "=[data/example_rollouts.jsonl]");
  return out;
}

// `<dir>/<name>.jsonl` pairs with `<dir>/<name>_rollouts.jsonl`.
std::vector<std::string> derived_paths(const json::object& global,
                                       const std::vector<std::string>& roots,
                                       std::vector<std::string>& looked_for) {
  std::vector<std::string> sources;
  if (const auto* input = global.if_contains("input_jsonl_fpath"); input && input->is_string())
    sources.emplace_back(input->get_string());
  for (const auto& inst : core::find_server_instances(global)) {
    if (inst.server_type != "responses_api_agents") continue;
    const auto* datasets = inst.config.if_contains("datasets");
    if (!datasets || !datasets->is_array()) continue;
    for (const auto& d : datasets->get_array())
      if (const auto* o = d.if_object())
        if (const auto* p = o->if_contains("jsonl_fpath"); p && p->is_string())
          sources.emplace_back(p->get_string());
  }
  std::vector<std::string> found;
  constexpr std::string_view kExt = ".jsonl";
  for (const auto& source : sources) {
    if (source.size() <= kExt.size() || !source.ends_with(kExt)) continue;
    std::string candidate = source.substr(0, source.size() - kExt.size()) + "_rollouts.jsonl";
    looked_for.push_back(candidate);
    try {
      found.push_back(core::resolve_search_path(candidate, roots, "rollouts file"));
    } catch (const core::ConfigError&) {
      // Not every dataset has recorded rollouts beside it.
    }
  }
  return found;
}

}  // namespace

ReplayModelConfig read_replay_model_config(const json::object& global,
                                           const core::ServerInstance& instance,
                                           const std::vector<std::string>& search_roots) {
  const std::string prefix = key_prefix(instance);
  ReplayModelConfig config;

  const std::string check_key = prefix + ".tool_output_check";
  std::string check = core::get_string(instance.config, "tool_output_check", "semantic");
  if (check == "semantic") {
    config.tool_output_check = ToolOutputCheck::semantic;
  } else if (check == "exact") {
    config.tool_output_check = ToolOutputCheck::exact;
  } else if (check == "off") {
    config.tool_output_check = ToolOutputCheck::off;
  } else {
    throw core::ConfigError("config error: " + check_key +
                            " must be one of semantic, exact, off (got '" + check + "'); e.g. ++" +
                            check_key + "=semantic");
  }

  const std::string latency_key = prefix + ".replay_latency_ms";
  double latency_ms = 0;
  try {
    latency_ms = core::get_double(instance.config, "replay_latency_ms", 0, 0, 3'600'000);
  } catch (const core::ConfigError& e) {
    throw core::ConfigError("config error: " + latency_key +
                            " must be a number of milliseconds between 0 and 3600000 (" + e.what() +
                            ")");
  }
  config.latency = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double, std::milli>(latency_ms));

  const std::string files_key = prefix + ".rollouts_jsonl_fpaths";
  auto listed = listed_paths(instance.config, files_key);
  if (!listed.empty()) {
    for (std::size_t i = 0; i < listed.size(); ++i)
      config.rollouts_files.push_back(core::resolve_search_path(
          listed[i], search_roots, "rollouts file", files_key + "[" + std::to_string(i) + "]"));
  } else {
    std::vector<std::string> looked_for;
    config.rollouts_files = derived_paths(global, search_roots, looked_for);
    if (config.rollouts_files.empty()) {
      std::string looked;
      for (const auto& p : looked_for) looked += "\n  - " + p;
      throw core::ConfigError(
          "config error: " + files_key +
          " is empty and no recorded rollouts were found beside input_jsonl_fpath or any agent "
          "dataset's jsonl_fpath (<dir>/<name>.jsonl pairs with <dir>/<name>_rollouts.jsonl)" +
          (looked.empty() ? std::string(": neither is configured") : ". Looked for:" + looked) +
          "\nList the rollouts files explicitly, e.g. ++" + files_key +
          "=[path/to/example_rollouts.jsonl]");
    }
  }
  // The same file derived twice (input and dataset) is loaded once.
  std::vector<std::string> unique;
  for (auto& f : config.rollouts_files)
    if (std::find(unique.begin(), unique.end(), f) == unique.end()) unique.push_back(f);
  config.rollouts_files = std::move(unique);
  return config;
}

void register_replay_model(servers::Registry& registry) {
  registry.add({
      "responses_api_models",
      "replay_model",
      "ReplayResponsesAPIModel",
      [](servers::ServerContext& ctx, http::Router& router) {
        auto roots = core::default_sources().search_roots;
        auto config = read_replay_model_config(ctx.global, ctx.instance, roots);
        const auto limits = servers::SessionLimits::from_config(ctx.global);
        auto store = std::make_shared<ReplayStore>(config.tool_output_check,
                                                   SessionBindings(limits.ttl, limits.capacity));
        for (const auto& file : config.rollouts_files) {
          std::size_t rows = store->load_file(file);
          spdlog::info("replay_model: {} recorded rows from {}", rows, file);
        }
        if (store->size() == 0)
          spdlog::warn(
              "replay_model: no usable recorded rows; every request will answer 409 "
              "replay_no_match");
        servers::ModelServerHandlers handlers;
        handlers.responses = [store, latency = config.latency](
                                 Request& req, json::object& params) -> asio::awaitable<Response> {
          if (latency.count() > 0) {
            asio::steady_timer timer(co_await asio::this_coro::executor, latency);
            co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
          }
          auto answer = store->answer(params, req.session_id);
          co_return Response::json(answer.body, answer.status);
        };
        servers::add_model_server_routes(ctx, router, std::move(handlers));
      },
  });
}

}  // namespace gym::models
