#pragma once
// Times a handler for the gym.* duration metrics (docs/design/telemetry-contract.md#metrics):
// `done(ms)` runs when the timer goes out of scope, however the scope ends
// (return, exception, or the destruction of a coroutine cut off by shutdown),
// so failed calls are recorded too. Monotonic clock.
#include <chrono>
#include <utility>

namespace gym::servers {

template <class Done>
class HandlerTimer {
 public:
  explicit HandlerTimer(Done done) : done_(std::move(done)) {}
  ~HandlerTimer() {
    done_(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
              .count());
  }
  HandlerTimer(const HandlerTimer&) = delete;
  HandlerTimer& operator=(const HandlerTimer&) = delete;

 private:
  Done done_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace gym::servers
