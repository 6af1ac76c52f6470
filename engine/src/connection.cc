#include "rig/engine/connection.h"

#include <cassert>
#include <cerrno>
#include <new>

#include "rig/engine/iov_cursor.h"
#include "spin.h"

namespace rig::engine {

int Connection::send_holding_turn(std::span<const iovec> iov) {
  return counted(socket_->send_all(iov), iov_bytes(iov), 1);
}

int Connection::send_staged(std::span<const iovec> head, const StagingPool::Chunk& chunk, std::size_t n) {
  // An unregistered chunk goes like any memory: the base class's send_fixed is send_all of
  // head and payload (a qualified call, so a backend's fixed-buffer path is not taken).
  const int rc = chunk.index >= 0
                     ? socket_->send_fixed(head, chunk.data, n, static_cast<unsigned>(chunk.index))
                     : socket_->Socket::send_fixed(head, chunk.data, n, 0);
  return counted(rc, iov_bytes(head) + n, 1);
}

int Connection::post_send(std::span<const iovec> iov) {
  turn_.take();
  posted_bytes_ = iov_bytes(iov);
  if (const int rc = socket_->post_send(iov); rc != 0) {
    release();
    return rc;
  }
  send_posted_ = true;
  return 0;
}

int Connection::finish_send() {
  if (!send_posted_) return 0;
  send_posted_ = false;
  const int rc = counted(socket_->finish_send(), posted_bytes_, 1);
  release();
  return rc;
}

bool Connection::send_control(std::span<const iovec> iov) {
  assert(iov.size() <= IovCursor::kWindow);  // a small frame: its rest fits one window
  if (!try_hold()) return false;
  const std::size_t bytes = iov_bytes(iov);
  const long sent = socket_->send_ready(iov);
  int rc = sent > 0 ? 0 : -EAGAIN;
  if (sent > 0 && static_cast<std::size_t>(sent) < bytes) {
    // The kernel took a part: the rest must follow, or the stream would hold half a frame.
    IovCursor rest(iov);
    rest.advance(static_cast<std::size_t>(sent));
    iovec left[IovCursor::kWindow];
    rc = socket_->send_all({left, rest.window(left)});
  }
  if (sent > 0) counted(rc, bytes, 1);
  release();
  return rc == 0;
}

int Connection::counted(int rc, std::size_t bytes, std::size_t messages) {
  if (rc == 0) {
    bump(counters_.bytes_sent, bytes);
    bump(counters_.messages_sent, messages);
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
    // release: publishes me to the holder's acquire exchange (flush_posted). seq_cst: the push,
    // then our look at the turn (try_take's seq_cst load); a releaser does the mirror: passes
    // the turn (seq_cst), then looks at posted_ (seq_cst, release()). Store-buffering: unless all
    // four are seq_cst, both could read the old value (we see the turn held, it sees nothing
    // posted) and the message would wait for the 200 us backstop below. Operations, not
    // fences: ThreadSanitizer models seq_cst operations but not fences, and on x86 the push and
    // the pass are locked instructions anyway.
  } while (!posted_.compare_exchange_weak(head, &me, std::memory_order_seq_cst, std::memory_order_relaxed));
  bool spun = false;
  for (;;) {
    // acquire: pairs with flush_posted's release exchange.
    std::uint32_t st = me.state.load(std::memory_order_acquire);
    if (st >= kSent) return st == kSent ? 0 : -static_cast<int>(st - kFailed);
    if (turn_.try_take()) {
      flush_posted();
      release();
      continue;
    }
    // A holder will send it (every release drains what was posted). Look a while first: a send
    // that ends within the spin costs this thread no system call (nor the holder a wake).
    if (st == kPending && !spun) {
      spun = true;
      // acquire: pairs with flush_posted's release exchange (the sender's result).
      if (spin_for(kCombineSpinUs, [&] { return me.state.load(std::memory_order_acquire) >= kSent; })) continue;
      st = me.state.load(std::memory_order_acquire);  // pairs with flush_posted's exchange
    }
    // Say that we sleep, so that the sender wakes us (and only then makes the wake's system
    // call): the CAS and the sender's exchange are read-modify-writes of one word, so one sees
    // the other. acquire on failure: it read the sender's result (pairs with its release exchange).
    // Success needs no order, but takes acquire too: a failure order stronger than success's is
    // not allowed before C++20, and GCC's builtin warns of it (-Winvalid-memory-model).
    if (st == kPending && !me.state.compare_exchange_strong(st, kSleeping, std::memory_order_acquire,
                                                            std::memory_order_acquire)) {
      continue;
    }
    // The bound is a backstop.
    futex_wait(me.state, kSleeping, 200'000);
  }
}

void Connection::release() {
  turn_.pass();
  // Whatever was posted while the turn was held: send it now if nobody else holds the turn
  // (a holder that comes later drains it on its own release).
  for (;;) {
    // seq_cst after each seq_cst pass: pairs with send_combined's seq_cst push and try_take's
    // seq_cst load, so that a poster that saw the turn held has its push seen here.
    if (posted_.load(std::memory_order_seq_cst) == nullptr || !turn_.try_take()) return;
    flush_posted();
    turn_.pass();
  }
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
    rc = counted(socket_->send_all(combined_iov_), iov_bytes(combined_iov_), count);
  } catch (const std::bad_alloc&) {
    rc = -ENOMEM;  // every taken message learns it; none is left unanswered
  }
  const std::uint32_t st = rc == 0 ? kSent : kFailed + static_cast<std::uint32_t>(-rc);
  for (Posted* p = list; p != nullptr;) {
    Posted* next = p->next;  // read before the store: p may be gone right after it
    // release: pairs with send_combined's acquire loads (and its CAS's acquire on failure).
    // Only a poster that said it sleeps is woken: the poster that sent its own message, or
    // one still spinning, costs no system call. FUTEX_WAKE touches no memory: harmless if the
    // poster already returned.
    if (p->state.exchange(st, std::memory_order_release) == kSleeping) futex_wake_all(p->state);
    p = next;
  }
}

}  // namespace rig::engine
