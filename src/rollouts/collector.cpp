#include "rollouts/collector.h"

#include "core/json_text.h"
#include "rollouts/failure_cause.h"
#include "rollouts/rows.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <cerrno>
#include <cstring>
#include <exception>
#include <stdexcept>

namespace gym::rollouts {
namespace asio = boost::asio;
namespace json = boost::json;

namespace {

constexpr std::size_t kFailureBodyBytes = 4096;

std::FILE* open_append(const std::filesystem::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "ab");
  if (!f)
    throw std::runtime_error("cannot open " + path.string() +
                             " for writing: " + std::strerror(errno));
  return f;
}

// Cuts a body at a UTF-8 boundary so the text stays valid JSON.
std::string body_prefix(const std::string& body) {
  if (body.size() <= kFailureBodyBytes) return body;
  std::size_t n = kFailureBodyBytes;
  while (n > 0 && (static_cast<unsigned char>(body[n]) & 0xC0) == 0x80) --n;
  return body.substr(0, n);
}

std::string one_line(std::string text) {
  for (auto& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

// The line failures are grouped under in the run's summary: the endpoint and what it did, else
// the innermost cause without its per-rollout details, else the collector's own error.
std::string cause_group(const std::optional<FailureCause>& cause, const std::string& error) {
  if (!cause) return one_line(error).substr(0, 200);
  if (auto f = endpoint_failure_of(*cause)) {
    switch (f->fault) {
      case EndpointFault::unreachable:
        return "model endpoint " + f->url + " gave no answer";
      case EndpointFault::unavailable:
        return "model endpoint " + f->url + " was unavailable";
      default:
        return "model endpoint " + f->url + " answered HTTP " + std::to_string(f->status);
    }
  }
  std::string text = cause->text();
  return text.size() > 200 ? text.substr(0, 200) + "..." : text;
}

}  // namespace

void Collector::note_context_length(const json::object& result) {
  const auto* response = result.if_contains("response");
  if (!response || !response->is_object()) return;
  const auto* error = response->get_object().if_contains("error");
  if (!error || !error->is_object()) return;
  const auto* code = error->get_object().if_contains("code");
  if (!code || !code->is_string() || code->get_string() != "context_length_exceeded") return;
  if (counts_.context_length++ == 0)
    if (const auto* m = error->get_object().if_contains("message"); m && m->is_string())
      counts_.context_length_message = one_line(std::string(m->get_string())).substr(0, 500);
}

json::object strip_for_aggregation(const json::object& result) {
  json::object out;
  for (const auto& kv : result) {
    if (kv.key() == "response" || kv.key() == "responses_create_params") continue;
    out.emplace(kv.key(), kv.value());
  }
  if (const auto* response = result.if_contains("response"); response && response->is_object())
    if (const auto* usage = response->get_object().if_contains("usage"); usage && !usage->is_null())
      out["response"] = json::object{{"usage", *usage}};
  return out;
}

Collector::Collector(http::HttpClient& client, std::map<std::string, std::string> agent_urls,
                     const OutputPaths& paths, bool route_failures_to_sidecar,
                     telemetry::TraceContext trace, std::size_t endpoint_error_limit)
    : client_(client),
      agent_urls_(std::move(agent_urls)),
      paths_(paths),
      route_failures_(route_failures_to_sidecar),
      trace_(std::move(trace)),
      endpoint_error_limit_(endpoint_error_limit) {
  rollouts_ = open_append(paths_.rollouts);
  failures_ = open_append(paths_.failures);
}

Collector::~Collector() {
  if (rollouts_) std::fclose(rollouts_);
  if (failures_) std::fclose(failures_);
}

void Collector::write(std::FILE* file, const json::object& row) {
  line_.clear();
  core::render_json(row, line_);
  line_.push_back('\n');
  if (std::fwrite(line_.data(), 1, line_.size(), file) != line_.size() || std::fflush(file) != 0)
    throw std::runtime_error("cannot write a row: " + std::string(std::strerror(errno)));
}

asio::awaitable<void> Collector::run(PlannedRows& rows, std::optional<std::int64_t> concurrency,
                                     Progress& progress) {
  std::size_t workers = rows.size();
  if (concurrency) workers = std::min<std::size_t>(workers, static_cast<std::size_t>(*concurrency));
  // Each worker takes the next row in materialized order (reproducible runs:
  // docs/design/deviations.md#processes); `workers` bounds the rollouts in flight. A counter lets
  // run() wait for all of them without a channel.
  auto ex = co_await asio::this_coro::executor;
  std::size_t running = workers + 1;  // the workers and the heartbeat
  asio::steady_timer all_done(ex, asio::steady_timer::time_point::max());
  // A write error: nothing sensible can go on. No new dispatch; the error is rethrown here once
  // every worker has returned (rethrowing in the completion handler would escape the event
  // loop's run() and terminate the process).
  std::exception_ptr failure;
  progress.tick(0, 0.0);  // 0/N at once: the first rollout may take minutes
  asio::steady_timer tick(ex);
  bool workers_finished = workers == 0;
  asio::co_spawn(ex, heartbeat(progress, tick, workers_finished), [&](std::exception_ptr) {
    if (--running == 0) all_done.cancel();
  });
  std::size_t workers_left = workers;
  for (std::size_t i = 0; i < workers; ++i)
    asio::co_spawn(ex, worker(rows, progress), [&](std::exception_ptr e) {
      if (e) {
        if (!failure) failure = e;
        stopping_ = true;
      }
      if (--workers_left == 0) {
        workers_finished = true;
        tick.cancel();
      }
      if (--running == 0) all_done.cancel();
    });
  if (running > 0) co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
  if (failure) std::rethrow_exception(failure);
}

asio::awaitable<void> Collector::worker(PlannedRows& rows, Progress& progress) {
  while (!stopping_) {
    auto row = rows.next();
    if (!row) break;
    co_await run_one(*row, progress);
  }
}

asio::awaitable<void> Collector::heartbeat(Progress& progress, asio::steady_timer& tick,
                                           const bool& workers_finished) {
  while (!workers_finished) {
    tick.expires_after(std::chrono::seconds(1));
    co_await tick.async_wait(asio::as_tuple(asio::use_awaitable));
    if (workers_finished) break;
    const double oldest =
        in_flight_.empty()
            ? 0.0
            : std::chrono::duration<double>(Clock::now() - in_flight_.begin()->second).count();
    progress.tick(in_flight_.size(), oldest);
  }
}

void Collector::note_endpoint_failure(const FailureCause& cause, json::object& out) {
  const auto failure = endpoint_failure_of(cause);
  if (!failure) {
    rejections_in_a_row_ = 0;
    return;
  }
  out["_ng_failure_endpoint"] = failure->url;
  out["_ng_failure_endpoint_fault"] = to_string(failure->fault);
  if (failure->fault == EndpointFault::unavailable && stop_reason_.empty()) {
    stop_reason_ = cause.message;
    stopping_ = true;
  }
  if (failure->fault != EndpointFault::rejected) {
    rejections_in_a_row_ = 0;
    return;
  }
  const std::string kind = failure->url + " HTTP " + std::to_string(failure->status);
  rejections_in_a_row_ = kind == rejection_ ? rejections_in_a_row_ + 1 : 1;
  rejection_ = kind;
  if (endpoint_error_limit_ > 0 && rejections_in_a_row_ >= endpoint_error_limit_ &&
      stop_reason_.empty()) {
    stop_reason_ =
        "model endpoint " + failure->url + " answered HTTP " + std::to_string(failure->status) +
        " to " + std::to_string(rejections_in_a_row_) +
        " rollouts in a row (model_endpoint_error_limit); the last said: " + cause.message;
    stopping_ = true;
  }
}

asio::awaitable<Collector::RunAnswer> Collector::call_run(const json::object& row,
                                                          const std::string& agent) {
  RunAnswer answer;
  try {
    http::ClientRequest req;
    req.url = agent_urls_.at(agent) + "/run";
    req.body = core::render_json(row);
    req.destination = agent;
    req.trace = trace_;
    if (client_.traced()) req.trace.rollout_id = telemetry::rollout_id_of_row(row);
    req.started = &answer.call;
    // No read timeout: /run sends nothing until the rollout ends, and a long agentic rollout is
    // not a silent one. Its calls have their own limits; a dead agent stops the run (the
    // supervisor), a hung one shows as the oldest rollout in flight.
    req.read_timeout = std::chrono::milliseconds(0);
    auto resp = co_await client_.request(std::move(req));
    answer.status = resp.status;
    answer.body = std::move(resp.body);
    if (resp.status < 200 || resp.status >= 300) {
      answer.failure_class =
          http::is_transient_status(resp.status) ? "agent_request_failed" : "agent_run_error";
      answer.error = "/run answered HTTP " + std::to_string(resp.status);
      answer.cause = innermost_cause(resp.status, answer.body);
    } else {
      boost::system::error_code ec;
      answer.result = core::parse_json(answer.body, ec);
      if (ec || !answer.result.is_object()) {
        answer.failure_class = "agent_request_failed";
        answer.error =
            "/run answered " + std::string(ec ? "malformed JSON" : "JSON that is not an object");
      }
    }
  } catch (const http::RequestError& e) {
    answer.failure_class = "agent_request_failed";
    answer.error = e.what();
  }
  co_return answer;
}

json::object Collector::failure_row(const RunAnswer& answer) {
  json::object out;
  out["_ng_failure_class"] = answer.failure_class;
  out["_ng_failure_error"] = one_line(answer.error);
  out["_ng_failure_http_status"] =
      answer.status ? json::value(*answer.status) : json::value(nullptr);
  out["_ng_failure_response_body"] =
      answer.status ? json::value(body_prefix(answer.body)) : json::value(nullptr);
  if (answer.cause) {
    out["_ng_failure_cause"] = answer.cause->text();
    note_endpoint_failure(*answer.cause, out);
  } else {
    rejections_in_a_row_ = 0;
  }
  ++counts_.failure_causes[cause_group(answer.cause, answer.error)];
  // The trace of the failed rollout, when one is exported: from the failures file to the trace.
  const telemetry::SpanContext& trace = answer.call.valid() ? answer.call : trace_.span;
  if (trace.valid() && trace.sampled)
    out["_ng_failure_trace_id"] = telemetry::to_hex(trace.trace_id);
  return out;
}

void Collector::persist(const json::object& row, const std::string& agent, const json::object& out,
                        Progress& progress) {
  const auto* no_persist = out.if_contains("_ng_no_persist");
  if (no_persist && no_persist->is_bool() && no_persist->get_bool()) {
    ++counts_.not_persisted;
  } else if (out.contains("_ng_failure_class")) {
    write(failures_, out);
    ++counts_.failed;
    std::string line =
        "Rollout (" + std::to_string(key_of(row).first) + ", " +
        std::to_string(key_of(row).second) + ") of " + agent +
        " failed: " + core::render_json(out.at("_ng_failure_class")) + " " +
        (out.contains("_ng_failure_error") ? core::render_json(out.at("_ng_failure_error"))
                                           : std::string("(reported by the agent)"));
    if (const auto* why = out.if_contains("_ng_failure_cause"); why && why->is_string())
      line += "; cause: " + std::string(why->get_string());
    progress.print(line);
    if (!route_failures_) stopping_ = true;  // upstream's abort on the first failure
  } else {
    write(rollouts_, out);
    ++counts_.succeeded;
    rejections_in_a_row_ = 0;
    note_context_length(out);
  }
}

asio::awaitable<void> Collector::run_one(json::object& row, Progress& progress) {
  ++counts_.dispatched;
  const std::uint64_t number = dispatch_number_++;
  in_flight_.emplace(number, Clock::now());
  const std::string agent = agent_of(row);
  RunAnswer answer = co_await call_run(row, agent);
  json::object out =
      answer.failure_class.empty() ? std::move(answer.result.as_object()) : failure_row(answer);
  // Identity from the row, in place when the key exists, appended otherwise.
  for (const char* key : {"_ng_task_index", "_ng_rollout_index", "agent_ref", "skills_ref",
                          "_ng_attempt_index", "_ng_rollout_id"})
    if (const auto* v = row.if_contains(key)) out[key] = *v;
  persist(row, agent, out, progress);
  in_flight_.erase(number);
  progress.record(agent, out);
  row = json::object{};  // the row is not needed any more
}

}  // namespace gym::rollouts
