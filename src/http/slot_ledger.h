#pragma once
// The connection pool's limits and FIFO wait queue, without I/O
// (docs/reference/http-client.md#behaviour).
//
// A slot is one connection in use (including one still being opened). An acquisition is granted
// at once when its destination is below the per-host limit and the process is below the total
// limit; otherwise it waits. Waiters are served first-in, first-out: a waiter is never overtaken
// by a later waiter for the same destination, and a freed total slot goes to the oldest waiter
// of any destination that is below its per-host limit. Every operation is O(log destinations),
// independent of the number of waiters. Not thread-safe: one event loop owns it.
#include "telemetry/metrics/pool_wait.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <set>
#include <vector>

namespace gym::http {

using QueueConstraint = telemetry::QueueConstraint;  // why a wait began

class SlotLedger {
 public:
  // A waiting acquisition. Owned by the waiter; it must outlive its time in the queue.
  struct Waiter {
    std::function<void()> wake;  // called once when granted; must not re-enter the ledger
    bool granted = false;

   private:
    friend class SlotLedger;
    std::uint64_t seq_ = 0;
    std::size_t host_ = 0;
    bool queued_ = false;
    std::list<Waiter*>::iterator pos_;
  };

  // Limits of 0 mean unlimited. The per-host limit is capped by the total limit.
  SlotLedger(std::size_t total_limit, std::size_t per_host_limit);

  std::size_t add_host();
  // Takes a slot if the limits allow and nobody waits for this host.
  bool try_acquire(std::size_t host);
  // Queues `w`; returns why it waits (classified now, as the metric requires).
  QueueConstraint enqueue(Waiter& w, std::size_t host);
  // Removes a queued waiter (abandoned wait). No-op if it was granted or is not queued.
  void cancel(Waiter& w);
  // Frees a slot of `host` and grants freed capacity to waiters in FIFO order.
  void release(std::size_t host);

  std::size_t in_use() const { return in_use_; }
  std::size_t in_use(std::size_t host) const { return hosts_[host].in_use; }
  std::size_t waiting() const { return waiting_; }
  std::size_t total_limit() const { return total_limit_; }
  std::size_t per_host_limit() const { return per_host_limit_; }

 private:
  struct Host {
    std::size_t in_use = 0;
    std::list<Waiter*> waiters;
    std::optional<std::uint64_t> ready_key;  // key in ready_ when the host can take a slot
  };
  bool total_free() const { return total_limit_ == 0 || in_use_ < total_limit_; }
  bool host_free(const Host& h) const { return per_host_limit_ == 0 || h.in_use < per_host_limit_; }
  void refresh(std::size_t host);
  void dispatch();

  std::size_t total_limit_;
  std::size_t per_host_limit_;
  std::size_t in_use_ = 0;
  std::size_t waiting_ = 0;
  std::uint64_t next_seq_ = 0;
  std::vector<Host> hosts_;
  // (sequence of the host's oldest waiter, host) for hosts with waiters below their limit.
  std::set<std::pair<std::uint64_t, std::size_t>> ready_;
};

}  // namespace gym::http
