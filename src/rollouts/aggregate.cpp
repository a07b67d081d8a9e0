#include "rollouts/aggregate.h"

#include "core/json_text.h"
#include "rollouts/rows.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace gym::rollouts {
namespace asio = boost::asio;
namespace json = boost::json;

asio::awaitable<json::array> fetch_aggregate_metrics(
    http::HttpClient& client, const std::map<std::string, std::string>& agent_urls,
    std::vector<json::object> rows) {
  std::map<std::string, std::vector<json::object>> by_agent;
  for (auto& row : rows) by_agent[agent_of(row)].push_back(std::move(row));
  json::array entries;
  for (auto& [agent, group] : by_agent) {
    std::stable_sort(group.begin(), group.end(),
                     [](const auto& a, const auto& b) { return key_of(a) < key_of(b); });
    json::array verify_responses;
    verify_responses.reserve(group.size());
    for (auto& row : group) verify_responses.emplace_back(std::move(row));
    auto it = agent_urls.find(agent);
    if (it == agent_urls.end()) throw std::runtime_error("no server for agent " + agent);
    json::object body{{"verify_responses", std::move(verify_responses)}};
    auto resp = co_await client.post_json(it->second + "/aggregate_metrics", body, {}, agent);
    json::value answer;
    if (resp.status == 200) {
      boost::system::error_code ec;
      answer = core::parse_json(resp.body, ec);
    }
    if (!answer.is_object())
      throw std::runtime_error(agent + "/aggregate_metrics answered HTTP " +
                               std::to_string(resp.status) + ": " + resp.body.substr(0, 500));
    // The agent computed NeMo Gym's default because its resources server has no
    // /aggregate_metrics (agents/simple_agent.cpp sets the header).
    if (auto why = http::find_header(resp.headers, "X-Gym-Default-Aggregate-Metrics"); !why.empty())
      std::printf("note: %s; the aggregate metrics of %s are NeMo Gym's default computation\n",
                  std::string(why).c_str(), agent.c_str());
    auto& a = answer.as_object();
    auto member = [&](const char* key, json::value fallback) {
      auto* v = a.if_contains(key);
      return v ? *v : fallback;
    };
    entries.push_back(
        json::object{{"agent_ref", json::object{{"name", agent}}},
                     {"agent_metrics", member("agent_metrics", json::object{})},
                     {"key_metrics", member("key_metrics", json::object{})},
                     {"group_level_metrics", member("group_level_metrics", json::array{})}});
  }
  co_return entries;
}

void write_aggregate_metrics(const std::filesystem::path& path, const json::array& entries) {
  for (const auto& e : entries) {
    const auto& entry = e.as_object();
    std::printf("\nKey metrics for %s:\n%s\n",
                std::string(entry.at("agent_ref").at("name").as_string()).c_str(),
                core::render_json_indented(entry.at("key_metrics"), 4).c_str());
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << core::render_json_indented(entries, 2);
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace gym::rollouts
