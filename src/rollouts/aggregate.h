#pragma once
// The aggregate metrics of a collection (runtime.md 7.9): each agent's /aggregate_metrics over
// its successful rows, written to <stem>_aggregate_metrics.json.
#include "http/client.h"

#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace gym::rollouts {

// Groups `rows` (stripped results) by agent, sorts each group by (task, rollout), posts them to
// every agent in name order and returns the file's entries. Throws std::runtime_error naming
// the agent when a call fails.
boost::asio::awaitable<boost::json::array> fetch_aggregate_metrics(
    http::HttpClient& client, const std::map<std::string, std::string>& agent_urls,
    std::vector<boost::json::object> rows);

// Writes the entries (indent 2) and prints each agent's key metrics (indent 4).
void write_aggregate_metrics(const std::filesystem::path& path, const boost::json::array& entries);

}  // namespace gym::rollouts
