#pragma once
// Dispatch of expanded rows to the agents' /run (runtime.md 7.4-7.6): materialized order, at
// most `concurrency` in flight, results written in completion order and flushed per row,
// failures to the sidecar. Runs on one event loop; not thread-safe except stop().
#include "http/client.h"
#include "rollouts/options.h"
#include "rollouts/progress.h"

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gym::rollouts {

struct CollectionCounts {
  std::size_t dispatched = 0;
  std::size_t succeeded = 0;      // written to the rollouts file
  std::size_t failed = 0;         // written to the failures sidecar
  std::size_t not_persisted = 0;  // `_ng_no_persist`
};

class Collector {
 public:
  // `agent_urls`: agent instance -> "http://host:port". Opens the rollouts and failures files
  // for appending (the caller truncates them for a fresh run).
  // `trace`: the parent of every /run call (the gym.job span, or none).
  Collector(http::HttpClient& client, std::map<std::string, std::string> agent_urls,
            const OutputPaths& paths, bool route_failures_to_sidecar,
            telemetry::TraceContext trace = {});
  ~Collector();

  // Runs every row; returns when all finished or after stop().
  boost::asio::awaitable<void> run(std::vector<boost::json::object> rows,
                                   std::optional<std::int64_t> concurrency, Progress& progress);
  // No new dispatch after this; in-flight rollouts still finish (call on the loop's thread).
  void stop() { stopping_ = true; }

  const CollectionCounts& counts() const { return counts_; }
  // Successful results of this run, stripped for /aggregate_metrics (runtime.md 7.9).
  std::vector<boost::json::object>& successes() { return successes_; }

 private:
  boost::asio::awaitable<void> worker(std::vector<boost::json::object>& rows, std::size_t& next,
                                      Progress& progress);
  boost::asio::awaitable<void> run_one(boost::json::object& row, Progress& progress);
  void write(std::FILE* file, const boost::json::object& row);

  http::HttpClient& client_;
  std::map<std::string, std::string> agent_urls_;
  OutputPaths paths_;
  bool route_failures_;
  telemetry::TraceContext trace_;
  std::FILE* rollouts_ = nullptr;
  std::FILE* failures_ = nullptr;
  bool stopping_ = false;
  CollectionCounts counts_;
  std::vector<boost::json::object> successes_;
  std::string line_;  // reused rendering buffer
};

// A result without `response` (but its `response.usage`) and `responses_create_params`: what
// /aggregate_metrics needs (runtime.md 7.9).
boost::json::object strip_for_aggregation(const boost::json::object& result);

}  // namespace gym::rollouts
