#include "orchestrator/model_readiness.h"

#include "core/secrets.h"
#include "http/url.h"
#include "orchestrator/model_preflight.h"
#include "orchestrator/probe.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace gym::orchestrator {
namespace json = boost::json;

namespace {

using Clock = std::chrono::steady_clock;

// The readiness bound every model endpoint shares: model_endpoint_readiness_timeout_seconds from
// the first probe.
struct EndpointWait {
  double timeout_s;
  Clock::time_point started;
  Clock::time_point deadline() const {
    return started +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  }
};

// One probe of `e`: a GET (with the model server's headers when it is checked); for https
// without a check, a completed TLS handshake counts, and a certificate we would refuse fails.
ProbeResult probe_endpoint(const http::Url& url, const ModelEndpoint& e) {
  const int port = std::atoi(url.port.c_str());
  const ProbeHeaders headers = e.check ? e.check->headers : ProbeHeaders{};
  if (!url.tls) return http_get(url.host, port, url.target, std::chrono::seconds(5), headers);
  if (e.check) return https_get(url.host, port, url.target, std::chrono::seconds(10), headers);
  return tls_handshake(url.host, port, std::chrono::seconds(5));
}

// Probes `e` every 3 s until it answers (`answer`), saying why it waits now and then (vLLM loads
// for minutes). Exit code 2 for an endpoint that cannot answer (no http(s) URL, a name that does
// not resolve, a certificate we refuse) or that did not answer in time; a signal's code.
int wait_for_endpoint(const ModelEndpoint& e, const EndpointWait& wait, ProbeResult& answer,
                      const SignalWait& take_signal) {
  const std::string shown = core::masked_url(e.url);  // a password in it stays home
  std::string why;
  const auto parsed = http::parse_url(e.probe_url(), why);
  if (!parsed) {
    std::fprintf(stderr, "error: %s = '%s' is not an http(s) URL\n", e.key.c_str(), shown.c_str());
    return 2;
  }
  // Every 30 s (sooner with a short timeout).
  const auto report_every = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::clamp(wait.timeout_s / 10, 3.0, 30.0)));
  auto next_report = Clock::now() + report_every;
  for (bool reported = false;;) {
    if (int code = take_signal(std::chrono::milliseconds(0))) return code;
    answer = probe_endpoint(*parsed, e);
    if (answer.outcome == ProbeOutcome::success) return 0;
    if ((parsed->tls && answer.outcome == ProbeOutcome::unknown_error) ||
        answer.error.rfind("cannot resolve", 0) == 0) {
      std::fprintf(stderr, "error: model endpoint %s = %s: %s\n", e.key.c_str(), shown.c_str(),
                   answer.error.c_str());
      return 2;
    }
    const auto now = Clock::now();
    if (!reported) {
      spdlog::info("waiting for model endpoint {} ({}): {}", shown, e.key, answer.error);
      reported = true;
    } else if (now >= next_report) {
      next_report = now + report_every;
      const auto elapsed =
          std::chrono::duration_cast<std::chrono::seconds>(now - wait.started).count();
      spdlog::info(
          "still waiting for model endpoint {} ({}): {}:{:02} of "
          "model_endpoint_readiness_timeout_seconds={} s; last: {}",
          shown, e.key, elapsed / 60, elapsed % 60, wait.timeout_s, answer.error);
    }
    if (now > wait.deadline()) {
      std::fprintf(stderr,
                   "error: model endpoint %s = %s did not answer within "
                   "model_endpoint_readiness_timeout_seconds=%g\n",
                   e.key.c_str(), shown.c_str(), wait.timeout_s);
      return 2;
    }
    if (int code = take_signal(std::chrono::milliseconds(3000))) return code;
  }
}

}  // namespace

int wait_for_model_endpoints(const json::object& cfg,
                             const std::vector<core::ServerInstance>& instances,
                             const SignalWait& take_signal) {
  const double timeout_s =
      core::get_double(cfg, "model_endpoint_readiness_timeout_seconds", 600, 0, 1e9);
  if (timeout_s == 0) return 0;
  const auto endpoints =
      model_endpoints(cfg, instances, core::get_bool(cfg, "model_endpoint_preflight", true));
  const EndpointWait wait{timeout_s, Clock::now()};
  for (const auto& e : endpoints) {
    ProbeResult answer;
    if (int code = wait_for_endpoint(e, wait, answer, take_signal)) return code;
    if (!e.check) continue;
    const auto verdict = check_models_answer(*e.check, answer.status, answer.body);
    if (verdict.kind == PreflightVerdict::Kind::fail) {
      std::fprintf(stderr, "error: %s\n", verdict.message.c_str());
      return 2;
    }
    if (verdict.kind == PreflightVerdict::Kind::warn) spdlog::warn("{}", verdict.message);
  }
  return 0;
}

}  // namespace gym::orchestrator
