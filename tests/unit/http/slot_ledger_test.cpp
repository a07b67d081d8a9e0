// The pool's limits and FIFO queue, tested without sockets.
#include "http/slot_ledger.h"

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <vector>

using gym::http::QueueConstraint;
using gym::http::SlotLedger;

namespace {

// Waiters that record the order in which they were granted.
struct Waiters {
  std::deque<SlotLedger::Waiter> all;
  std::vector<int> granted_order;
  SlotLedger::Waiter& make(int id) {
    all.emplace_back();
    all.back().wake = [this, id] { granted_order.push_back(id); };
    return all.back();
  }
};

}  // namespace

TEST(SlotLedger, GrantsImmediatelyBelowLimits) {
  SlotLedger l(10, 2);
  auto h = l.add_host();
  EXPECT_TRUE(l.try_acquire(h));
  EXPECT_TRUE(l.try_acquire(h));
  EXPECT_FALSE(l.try_acquire(h));  // per-host limit reached
  EXPECT_EQ(l.in_use(), 2u);
  EXPECT_EQ(l.in_use(h), 2u);
}

TEST(SlotLedger, ZeroMeansUnlimited) {
  SlotLedger l(0, 0);
  auto h = l.add_host();
  for (int i = 0; i < 100000; ++i) ASSERT_TRUE(l.try_acquire(h));
  EXPECT_EQ(l.in_use(), 100000u);
}

TEST(SlotLedger, PerHostLimitIsCappedByTotal) {
  SlotLedger l(3, 0);
  EXPECT_EQ(l.per_host_limit(), 3u);
  SlotLedger m(3, 10);
  EXPECT_EQ(m.per_host_limit(), 3u);
}

TEST(SlotLedger, ClassifiesTheWaitWhenItStarts) {
  SlotLedger l(2, 1);
  auto a = l.add_host(), b = l.add_host();
  Waiters w;
  ASSERT_TRUE(l.try_acquire(a));
  EXPECT_EQ(l.enqueue(w.make(1), a), QueueConstraint::per_host);
  ASSERT_TRUE(l.try_acquire(b));  // now the total is reached too
  auto c = l.add_host();
  EXPECT_EQ(l.enqueue(w.make(2), c), QueueConstraint::total);
  EXPECT_EQ(l.enqueue(w.make(3), a), QueueConstraint::total);  // both reached: total
}

TEST(SlotLedger, SameHostWaitersAreServedInArrivalOrder) {
  SlotLedger l(0, 1);
  auto h = l.add_host();
  Waiters w;
  ASSERT_TRUE(l.try_acquire(h));
  for (int i = 1; i <= 5; ++i) l.enqueue(w.make(i), h);
  for (int i = 0; i < 5; ++i) l.release(h);
  EXPECT_EQ(w.granted_order, (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(l.in_use(h), 1u);
  EXPECT_EQ(l.waiting(), 0u);
}

TEST(SlotLedger, NewArrivalNeverOvertakesAWaiter) {
  SlotLedger l(0, 1);
  auto h = l.add_host();
  Waiters w;
  ASSERT_TRUE(l.try_acquire(h));
  l.enqueue(w.make(1), h);
  l.release(h);  // the slot goes to waiter 1 at once
  EXPECT_EQ(w.granted_order, std::vector<int>{1});
  EXPECT_FALSE(l.try_acquire(h));
}

TEST(SlotLedger, FreedTotalSlotGoesToTheOldestEligibleWaiterOfAnyHost) {
  SlotLedger l(2, 2);
  auto a = l.add_host(), b = l.add_host(), c = l.add_host();
  Waiters w;
  ASSERT_TRUE(l.try_acquire(a));
  ASSERT_TRUE(l.try_acquire(a));
  l.enqueue(w.make(1), b);  // oldest
  l.enqueue(w.make(2), c);
  l.enqueue(w.make(3), b);
  l.release(a);
  EXPECT_EQ(w.granted_order, std::vector<int>{1});
  l.release(a);
  EXPECT_EQ(w.granted_order, (std::vector<int>{1, 2}));
  l.release(b);
  EXPECT_EQ(w.granted_order, (std::vector<int>{1, 2, 3}));
}

TEST(SlotLedger, HostAtItsLimitDoesNotBlockOthers) {
  SlotLedger l(3, 1);
  auto a = l.add_host(), b = l.add_host();
  Waiters w;
  ASSERT_TRUE(l.try_acquire(a));
  ASSERT_TRUE(l.try_acquire(b));
  l.enqueue(w.make(1), a);  // blocked by a's per-host limit, total still free
  auto c = l.add_host();
  EXPECT_TRUE(l.try_acquire(c));
  EXPECT_TRUE(w.granted_order.empty());
  l.release(b);  // frees total but a is still at its limit
  EXPECT_TRUE(w.granted_order.empty());
  l.release(a);
  EXPECT_EQ(w.granted_order, std::vector<int>{1});
}

TEST(SlotLedger, CancelledWaiterLeavesNoTrace) {
  SlotLedger l(0, 1);
  auto h = l.add_host();
  Waiters w;
  ASSERT_TRUE(l.try_acquire(h));
  auto& first = w.make(1);
  l.enqueue(first, h);
  l.enqueue(w.make(2), h);
  l.cancel(first);  // abandoned head
  EXPECT_EQ(l.waiting(), 1u);
  l.release(h);
  EXPECT_EQ(w.granted_order, std::vector<int>{2});
  l.cancel(first);  // idempotent
  EXPECT_EQ(l.waiting(), 0u);
}

TEST(SlotLedger, ManyWaitersManyHostsStayConsistent) {
  // 16k waiters over 64 hosts: every one is granted exactly once, FIFO per host.
  SlotLedger l(32, 2);
  std::vector<std::size_t> hosts;
  for (int i = 0; i < 64; ++i) hosts.push_back(l.add_host());
  std::deque<SlotLedger::Waiter> waiters;
  std::vector<std::vector<int>> order(64);
  std::vector<std::size_t> holders;  // hosts currently holding a slot
  int next_id = 0;
  for (int i = 0; i < 16384; ++i) {
    auto h = hosts[static_cast<std::size_t>(i * 7919) % 64];
    if (l.try_acquire(h)) {
      holders.push_back(h);
      continue;
    }
    waiters.emplace_back();
    int id = next_id++;
    waiters.back().wake = [&, h, id] {
      order[h].push_back(id);
      holders.push_back(h);
    };
    l.enqueue(waiters.back(), h);
    ASSERT_LE(l.in_use(), 32u);
  }
  while (!holders.empty()) {
    auto h = holders.front();
    holders.erase(holders.begin());
    l.release(h);
    ASSERT_LE(l.in_use(), 32u);
    ASSERT_LE(l.in_use(h), 2u);
  }
  std::size_t granted = 0;
  for (auto& o : order) {
    granted += o.size();
    EXPECT_TRUE(std::is_sorted(o.begin(), o.end()));
  }
  EXPECT_EQ(granted, static_cast<std::size_t>(next_id));
  EXPECT_EQ(l.in_use(), 0u);
  EXPECT_EQ(l.waiting(), 0u);
}
