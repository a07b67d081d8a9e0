#include "rollouts/aggregate.h"

#include "core/json_text.h"
#include "rollouts/collector.h"
#include "rollouts/rows.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace gym::rollouts {
namespace asio = boost::asio;
namespace json = boost::json;

std::map<std::string, std::vector<ResultLine>> results_by_agent(
    const std::filesystem::path& rollouts) {
  std::map<std::string, std::vector<ResultLine>> by_agent;
  for_each_jsonl(
      rollouts,
      [&](JsonlLine& line) {
        RolloutKey key;
        try {
          key = key_of(line.row);
        } catch (const std::runtime_error& e) {
          throw std::runtime_error(rollouts.string() + " line " + std::to_string(line.number) +
                                   ": " + e.what());
        }
        by_agent[agent_of(line.row)].push_back({key, line.offset});
      },
      JsonlReading::own_file());  // an older gym may have written bytes that are not UTF-8
  for (auto& [agent, lines] : by_agent)
    std::stable_sort(lines.begin(), lines.end(),
                     [](const auto& a, const auto& b) { return a.key < b.key; });
  return by_agent;
}

std::string verify_responses_body(const std::filesystem::path& rollouts,
                                  const std::vector<ResultLine>& lines) {
  std::ifstream in(rollouts, std::ios::binary);
  std::string body = "{\"verify_responses\":[", text;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    in.clear();
    in.seekg(static_cast<std::streamoff>(lines[i].offset));
    std::getline(in, text);
    if (!core::is_valid_utf8(text)) text = core::utf8_replace_invalid(text);
    boost::system::error_code ec;
    auto row = core::parse_json(text, ec);
    if (!in || ec || !row.is_object())
      throw std::runtime_error(rollouts.string() + " changed while it was read (the line at byte " +
                               std::to_string(lines[i].offset) + ")");
    if (i > 0) body.push_back(',');
    core::render_json(strip_for_aggregation(row.get_object()), body);
  }
  body += "]}";
  return body;
}

asio::awaitable<json::array> fetch_aggregate_metrics(
    http::HttpClient& client, const std::map<std::string, std::string>& agent_urls,
    const std::filesystem::path& rollouts) {
  json::array entries;
  for (auto& [agent, group] : results_by_agent(rollouts)) {
    auto it = agent_urls.find(agent);
    if (it == agent_urls.end()) throw std::runtime_error("no server for agent " + agent);
    http::ClientRequest req;
    req.url = it->second + "/aggregate_metrics";
    req.body = verify_responses_body(rollouts, group);
    req.destination = agent;
    group = {};
    auto resp = co_await client.request(std::move(req));
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
    // Moved, not copied: group_level_metrics has an entry per rollout (rollout_infos).
    auto member = [&](const char* key, json::value fallback) {
      auto* v = a.if_contains(key);
      return v ? std::move(*v) : fallback;
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
