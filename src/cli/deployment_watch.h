#pragma once
// `gym eval run --no-serve` against a deployment that went away (issue 13): every call would
// spend the whole retry budget, hours over a large input. The watch notices when the head
// server and every agent refuse connections, and the collection stops with what to do next.
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gym::cli {

class DeploymentWatch {
 public:
  using Clock = std::chrono::steady_clock;
  // `head_url` and `agent_urls` ("http://host:port"); `unreachable_seconds` (0: never give up)
  // is how long all of them must have refused before poll() reports the deployment gone.
  DeploymentWatch(std::string head_url, const std::map<std::string, std::string>& agent_urls,
                  double unreachable_seconds);

  // Probes at most once a second; 0 while the deployment may be alive, else prints why it is
  // not (every URL, how long) to stderr and returns 2 (a deployment failure).
  int poll(Clock::time_point now = Clock::now());

 private:
  std::vector<std::string> urls_;  // the head server first
  std::chrono::milliseconds limit_;
  std::optional<Clock::time_point> last_probe_, refusing_since_;
};

// True when a TCP connection to `url` is refused (or the host is unreachable) within `wait`;
// false when it is accepted or the attempt merely times out (a busy host is not a dead one).
bool connection_refused(const std::string& url, std::chrono::milliseconds wait);

}  // namespace gym::cli
