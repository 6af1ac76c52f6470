#include "rig/engine/connection.h"

#include <cerrno>
#include <new>

#include "rig/engine/iov_cursor.h"

namespace rig::engine {

int Connection::send_holding_turn(std::span<const iovec> iov) {
  const int rc = socket_->send_all(iov);
  if (rc == 0) {
    bump(counters_.bytes_sent, iov_bytes(iov));
    bump(counters_.messages_sent, 1);
  }
  bump(counters_.send_calls, 1);
  return rc;
}

int Connection::send_combined(std::span<const iovec> iov) {
  Posted me;
  me.iov = iov;
  Posted* head = posted_.load(std::memory_order_relaxed);
  do {
    me.next = head;
    // release: publishes me.iov and me.next to the turn holder's acquire exchange.
  } while (!posted_.compare_exchange_weak(head, &me, std::memory_order_release, std::memory_order_relaxed));
  TurnGuard turn(turn_);
  // acquire: pairs with flush_posted's release store: a previous holder sent it.
  int rc = me.result.load(std::memory_order_acquire);
  if (rc == 1) {
    flush_posted();  // ours is among them
    rc = me.result.load(std::memory_order_relaxed);
  }
  return rc;
}

void Connection::flush_posted() {
  // acquire: pairs with the posters' release: their Posted records are complete.
  Posted* list = posted_.exchange(nullptr, std::memory_order_acquire);
  if (list == nullptr) return;
  int rc = 0;
  std::size_t count = 0;
  try {
    batch_.clear();
    for (Posted* p = list; p != nullptr; p = p->next) batch_.push_back(p);
    combined_iov_.clear();
    // The stack is last-in first-out: send in posting order.
    for (auto it = batch_.rbegin(); it != batch_.rend(); ++it) {
      combined_iov_.insert(combined_iov_.end(), (*it)->iov.begin(), (*it)->iov.end());
    }
    count = batch_.size();
    rc = socket_->send_all(combined_iov_);
    bump(counters_.send_calls, 1);
    if (rc == 0) {
      bump(counters_.bytes_sent, iov_bytes(combined_iov_));
      bump(counters_.messages_sent, count);
    }
  } catch (const std::bad_alloc&) {
    rc = -ENOMEM;  // every taken message learns it; none is left unanswered
  }
  for (Posted* p = list; p != nullptr;) {
    Posted* next = p->next;  // read before the store: p may be gone right after it
    // release: pairs with send_combined's acquire.
    p->result.store(rc == 0 ? 0 : rc, std::memory_order_release);
    p = next;
  }
}

}  // namespace rig::engine
