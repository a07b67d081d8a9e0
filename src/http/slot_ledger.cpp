#include "http/slot_ledger.h"

namespace gym::http {

SlotLedger::SlotLedger(std::size_t total_limit, std::size_t per_host_limit)
    : total_limit_(total_limit), per_host_limit_(per_host_limit) {
  if (total_limit_ != 0 && (per_host_limit_ == 0 || per_host_limit_ > total_limit_))
    per_host_limit_ = total_limit_;
}

std::size_t SlotLedger::add_host() {
  hosts_.emplace_back();
  return hosts_.size() - 1;
}

bool SlotLedger::try_acquire(std::size_t host) {
  Host& h = hosts_[host];
  if (!h.waiters.empty() || !total_free() || !host_free(h)) return false;
  ++h.in_use;
  ++in_use_;
  return true;
}

QueueConstraint SlotLedger::enqueue(Waiter& w, std::size_t host) {
  QueueConstraint why = total_free() ? QueueConstraint::per_host : QueueConstraint::total;
  Host& h = hosts_[host];
  w.seq_ = next_seq_++;
  w.host_ = host;
  w.queued_ = true;
  w.granted = false;
  w.pos_ = h.waiters.insert(h.waiters.end(), &w);
  ++waiting_;
  refresh(host);
  dispatch();
  return why;
}

void SlotLedger::cancel(Waiter& w) {
  if (!w.queued_) return;
  Host& h = hosts_[w.host_];
  h.waiters.erase(w.pos_);
  w.queued_ = false;
  --waiting_;
  refresh(w.host_);
}

void SlotLedger::release(std::size_t host) {
  --hosts_[host].in_use;
  --in_use_;
  refresh(host);
  dispatch();
}

void SlotLedger::refresh(std::size_t host) {
  Host& h = hosts_[host];
  if (h.ready_key) ready_.erase({*h.ready_key, host});
  h.ready_key.reset();
  if (!h.waiters.empty() && host_free(h)) {
    h.ready_key = h.waiters.front()->seq_;
    ready_.emplace(*h.ready_key, host);
  }
}

void SlotLedger::dispatch() {
  while (total_free() && !ready_.empty()) {
    std::size_t host = ready_.begin()->second;
    Host& h = hosts_[host];
    Waiter* w = h.waiters.front();
    h.waiters.pop_front();
    w->queued_ = false;
    w->granted = true;
    --waiting_;
    ++h.in_use;
    ++in_use_;
    refresh(host);
    if (w->wake) w->wake();
  }
}

}  // namespace gym::http
