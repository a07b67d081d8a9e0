#include "models/async_limiter.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace gym::models {
namespace asio = boost::asio;

asio::awaitable<AsyncLimiter::Slot> AsyncLimiter::acquire() {
  if (limit_ == 0) co_return Slot(nullptr);
  if (in_use_ < limit_) {
    ++in_use_;
    co_return Slot(this);
  }
  auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor,
                                                    asio::steady_timer::time_point::max());
  waiters_.push_back(timer);
  auto [ec] = co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
  // Woken by release(): the slot was handed over (in_use_ unchanged). Torn down otherwise.
  if (std::find(waiters_.begin(), waiters_.end(), timer) != waiters_.end()) {
    waiters_.erase(std::find(waiters_.begin(), waiters_.end(), timer));
    throw boost::system::system_error(ec ? ec : asio::error::operation_aborted);
  }
  co_return Slot(this);
}

void AsyncLimiter::release() {
  if (!waiters_.empty()) {
    auto next = std::move(waiters_.front());
    waiters_.pop_front();
    next->cancel();  // its slot is this one
    return;
  }
  --in_use_;
}

}  // namespace gym::models
