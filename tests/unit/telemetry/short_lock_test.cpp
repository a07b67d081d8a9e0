// short_lock.h: a lock taken by spinning first is still a lock, and a holder that keeps it past
// the spin is waited for, not overtaken.
#include "telemetry/common/short_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace gym::telemetry {
namespace {

TEST(ShortLock, ExcludesOtherHolders) {
  std::mutex mutex;
  long counter = 0;  // not atomic: only the lock keeps the increments whole
  constexpr int kThreads = 4, kEach = 100000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        const auto lock = short_lock(mutex);
        counter = counter + 1;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter, long{kThreads} * kEach);
}

TEST(ShortLock, WaitsForAHolderThatOutlastsTheSpin) {
  std::mutex mutex;
  std::atomic<bool> held{false};
  bool released = false;  // written by the holder before it unlocks
  std::thread holder([&] {
    std::lock_guard lock(mutex);
    held = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // far past 100 pauses
    released = true;
  });
  while (!held) std::this_thread::yield();
  {
    const auto lock = short_lock(mutex);
    EXPECT_TRUE(lock.owns_lock());
    EXPECT_TRUE(released);
  }
  holder.join();
}

}  // namespace
}  // namespace gym::telemetry
