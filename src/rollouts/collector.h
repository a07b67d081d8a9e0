#pragma once
// Dispatch of expanded rows to the agents' /run
// (docs/design/failures-and-retries.md#rollouts-and-failure-rows): materialized order, at most
// `concurrency` in flight, results written in completion order and flushed per row, failures to the
// sidecar. Runs on one event loop; not thread-safe except stop().
#include "http/client.h"
#include "rollouts/failure_cause.h"
#include "rollouts/options.h"
#include "rollouts/plan.h"
#include "rollouts/progress.h"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
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
  // Successful rows whose model call was refused as too long for the model's context: their
  // response carries error.code context_length_exceeded (a score of a turn that never ran).
  std::size_t context_length = 0;
  std::string context_length_message;  // the first such refusal, as the endpoint worded it
  // Failure causes, grouped: "model endpoint http://... gave no answer" -> rollouts.
  std::map<std::string, std::size_t> failure_causes;
};

class Collector {
 public:
  // `agent_urls`: agent instance -> "http://host:port". Opens the rollouts and failures files
  // for appending (the caller truncates them for a fresh run).
  // `trace`: the parent of every /run call (the gym.job span, or none).
  // `endpoint_error_limit`: stop once this many rollouts in a row failed with the same 4xx from
  // the same model endpoint (model_endpoint_error_limit; 0: never).
  Collector(http::HttpClient& client, std::map<std::string, std::string> agent_urls,
            const OutputPaths& paths, bool route_failures_to_sidecar,
            telemetry::TraceContext trace = {}, std::size_t endpoint_error_limit = 20);
  ~Collector();

  // Runs every row, read one at a time as a worker is free; returns when all finished or after
  // stop().
  boost::asio::awaitable<void> run(PlannedRows& rows, std::optional<std::int64_t> concurrency,
                                   Progress& progress);
  // No new dispatch after this; in-flight rollouts still finish (call on the loop's thread).
  void stop() { stopping_ = true; }

  const CollectionCounts& counts() const { return counts_; }
  // Why the collector stopped dispatching on its own: a model endpoint declared unavailable, or
  // the same 4xx for endpoint_error_limit rollouts in a row. Empty when it did not.
  const std::string& stop_reason() const { return stop_reason_; }

 private:
  boost::asio::awaitable<void> worker(PlannedRows& rows, Progress& progress);
  // What /run answered: a result, or what the failure row says.
  struct RunAnswer {
    std::optional<int> status;  // none: no answer (connection, timeout)
    std::string body, error;
    std::string failure_class;  // empty: `result` is the rollout's row
    std::optional<FailureCause> cause;
    boost::json::value result;
    telemetry::SpanContext call;  // the /run call's CLIENT span, when the client started one
  };

  boost::asio::awaitable<void> run_one(boost::json::object& row, Progress& progress);
  boost::asio::awaitable<RunAnswer> call_run(const boost::json::object& row,
                                             const std::string& agent);
  // The failure row of an answer; counts its cause.
  boost::json::object failure_row(const RunAnswer& answer);
  // Writes `out` to the rollouts file or the failures sidecar, or neither (`_ng_no_persist`).
  void persist(const boost::json::object& row, const std::string& agent,
               const boost::json::object& out, Progress& progress);
  // Every second until the workers finished (`tick` is cancelled then): the bar's elapsed time,
  // rollouts in flight, the oldest one's age (a hung endpoint shows as a growing age, not as
  // silence).
  boost::asio::awaitable<void> heartbeat(Progress& progress, boost::asio::steady_timer& tick,
                                         const bool& workers_finished);
  // The endpoint's part of a failure row, and whether the run must stop because of it.
  void note_endpoint_failure(const FailureCause& cause, boost::json::object& out);
  // Counts a row whose response says the endpoint refused the turn as too long for the context.
  void note_context_length(const boost::json::object& result);
  void write(std::FILE* file, const boost::json::object& row);

  using Clock = std::chrono::steady_clock;

  http::HttpClient& client_;
  std::map<std::string, std::string> agent_urls_;
  OutputPaths paths_;
  bool route_failures_;
  telemetry::TraceContext trace_;
  std::FILE* rollouts_ = nullptr;
  std::FILE* failures_ = nullptr;
  bool stopping_ = false;
  std::string stop_reason_;
  std::size_t endpoint_error_limit_;
  // The last run of identical 4xx endpoint failures: "<url> HTTP <status>" and its length.
  std::string rejection_;
  std::size_t rejections_in_a_row_ = 0;
  std::map<std::uint64_t, Clock::time_point> in_flight_;  // dispatch number -> start
  std::uint64_t dispatch_number_ = 0;
  CollectionCounts counts_;
  std::string line_;  // reused rendering buffer
};

// A result without `response` (but its `response.usage`) and `responses_create_params`: what
// /aggregate_metrics needs (docs/reference/aggregate-metrics.md).
boost::json::object strip_for_aggregation(const boost::json::object& result);

}  // namespace gym::rollouts
