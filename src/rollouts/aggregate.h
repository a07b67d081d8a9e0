#pragma once
// The aggregate metrics of a collection: each agent's /aggregate_metrics over
// its successful rows, written to <stem>_aggregate_metrics.json.
#include "http/client.h"

#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gym::rollouts {

// Where a result is in the rollouts file.
struct ResultLine {
  std::pair<std::int64_t, std::int64_t> key;  // (task, rollout)
  std::uint64_t offset = 0;                   // of its line
};
// The results in `rollouts` by agent, each agent's sorted by (task, rollout) (rows of one key in
// file order); read line by line, only keys and offsets kept. Throws std::runtime_error naming a
// line that cannot be read.
std::map<std::string, std::vector<ResultLine>> results_by_agent(
    const std::filesystem::path& rollouts);
// The body of an /aggregate_metrics call, {"verify_responses":[...]}: the results at `lines` of
// `rollouts`, stripped for aggregation (rollouts/collector.h), in that order.
std::string verify_responses_body(const std::filesystem::path& rollouts,
                                  const std::vector<ResultLine>& lines);

// Reads the results in `rollouts` (the rollouts file: this run's rows and those a --resume kept)
// line by line, groups them by agent, sorts each group by (task, rollout), and posts each group,
// stripped for aggregation (rollouts/collector.h), to its agent's /aggregate_metrics, agents in
// name order; returns the file's entries. Holds the key and place of each row and one agent's
// request body at a time, never the rows. Throws std::runtime_error naming the agent when a call
// fails, or the line of the file that cannot be read.
boost::asio::awaitable<boost::json::array> fetch_aggregate_metrics(
    http::HttpClient& client, const std::map<std::string, std::string>& agent_urls,
    const std::filesystem::path& rollouts);

// Writes the entries (indent 2) and prints each agent's key metrics (indent 4).
void write_aggregate_metrics(const std::filesystem::path& path, const boost::json::array& entries);

}  // namespace gym::rollouts
