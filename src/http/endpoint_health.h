#pragma once
// Whether an external endpoint (a model server's OpenAI-compatible endpoint) is up, judged from
// every attempt of every call this process makes to it (docs/reference/model-servers.md). When
// every attempt failed (refused, reset, timed out, or answered 5xx) for `unavailable_after`, it is
// unavailable: the client then ends a call at its next failed attempt instead of retrying until
// the retry budget runs out, so a dead endpoint fails rollouts in a minute, not in five. Any
// answer but a 5xx makes it healthy again at once; a 429 too (a rate limit means it is alive).
// Logs once when it becomes unavailable and once when it recovers. Thread-safe; the time is
// passed in.
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace gym::http {

class EndpointHealth {
 public:
  using Clock = std::chrono::steady_clock;
  // `name`: the endpoint as logs and messages name it (its base URL). `unavailable_after`:
  // model_endpoint_unavailable_seconds; zero: never unavailable.
  EndpointHealth(std::string name, std::chrono::milliseconds unavailable_after);

  // An attempt got an answer that is not a 5xx.
  void answered(Clock::time_point now);
  // An attempt failed; `error` says how (the message's "last: ..."). Returns whether the endpoint
  // is now unavailable.
  bool failed(std::string_view error, Clock::time_point now);

  bool unavailable() const;
  // "every call for 61 s was refused or answered 5xx (last: <error>)", for the call that stops.
  std::string why_unavailable(Clock::time_point now) const;
  const std::string& name() const { return name_; }

 private:
  mutable std::mutex mu_;
  std::string name_;
  std::chrono::milliseconds unavailable_after_;
  std::optional<Clock::time_point> failing_since_;  // the first failure since the last answer
  std::string last_error_;
  bool unavailable_ = false;
};

}  // namespace gym::http
