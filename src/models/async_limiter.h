#pragma once
// At most N calls in flight (upstream's asyncio.Semaphore around the endpoint call of
// openai_model's max_concurrent_requests and azure_openai_model's num_concurrent_requests):
// callers beyond N wait first-in, first-out. Loop thread only.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstddef>
#include <deque>
#include <memory>

namespace gym::models {

class AsyncLimiter {
 public:
  explicit AsyncLimiter(std::size_t limit) : limit_(limit) {}  // 0: unlimited

  // Holds a slot until destroyed.
  class Slot {
   public:
    explicit Slot(AsyncLimiter* owner) : owner_(owner) {}
    Slot(Slot&& o) noexcept : owner_(o.owner_) { o.owner_ = nullptr; }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    Slot& operator=(Slot&&) = delete;
    ~Slot() {
      if (owner_) owner_->release();
    }

   private:
    AsyncLimiter* owner_;
  };

  boost::asio::awaitable<Slot> acquire();
  std::size_t in_use() const { return in_use_; }

 private:
  void release();

  std::size_t limit_;
  std::size_t in_use_ = 0;
  // Each waiter sleeps on its own timer; release() hands its slot to the first by cancelling it.
  std::deque<std::shared_ptr<boost::asio::steady_timer>> waiters_;
};

}  // namespace gym::models
