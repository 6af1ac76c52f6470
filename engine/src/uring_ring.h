// One io_uring ring that runs one operation at a time to completion: the caller submits its SQE
// and reaps its own CQEs (for a zero-copy send, both the result and the notification) before it
// returns, so nothing of it is left in flight for a later, unrelated caller to reap. Besides, one
// operation may be posted (post()) to go into the kernel with the next one, in the same
// io_uring_enter: a send of batched reports rides on the read that follows it; and run_within's
// watchdog timeout stays in flight between operations. Every reap takes the completions of
// those two (absorb()) wherever they come.
// Private to the io_uring backend.
#pragma once

#include <liburing.h>

#include <cerrno>
#include <cstdint>
#include <span>

#include "rig/engine/syscall_count.h"

namespace rig::engine {

// liburing 2.3 lacks the usage report of zero-copy sends (kernel 6.2).
#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

// SQ polling (engine/include/rig/engine/socket.h: sq_polling()): how long the SQ thread polls
// after the last submission before it sleeps, and how long a waiter looks at its completion
// queue before it sleeps in the kernel.
inline constexpr unsigned kSqThreadIdleMs = 50;
inline constexpr int kSqPollSpinUs = 50;
inline constexpr int kSqPollMinCpus = 8;
// How long the call that submits a posted send with an operation waits for both completions
// before it reaps them one by one (see Ring::submit).
inline constexpr long kRideWaitUs = 5000;

class Ring {
 public:
  // kPerThread: used only by the thread that made it (SINGLE_ISSUER|DEFER_TASKRUN where the
  // kernel has them). kShared: used by one thread at a time, successive users ordered by the
  // caller (a socket's send ring, used by whoever holds the send turn): COOP_TASKRUN only.
  enum class Use { kPerThread, kShared };
  explicit Ring(Use use, unsigned entries = 16);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  int error() const { return error_; }
  // The process's SQ thread polls this ring's submission queue (sq_polling()).
  bool sq_polled() const { return sq_polled_; }

  // Runs one prepared operation to completion and returns its result. A posted operation
  // (post()) still waiting for submission goes into the kernel in the same call.
  template <class Prep>
  int run(Prep prep) {
    if (error_ != 0) return error_;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return -EBUSY;  // cannot happen: one operation in flight per ring
    prep(sqe);
    io_uring_sqe_set_data64(sqe, kOperation);
    if (const int rc = submit(); rc < 0) return rc;
    int res = 0;
    const int w = reap([&](const io_uring_cqe& cqe) {
      res = cqe.res;
      return true;
    });
    return w < 0 ? w : res;
  }

  // Runs one prepared operation as run() does, cancelled once timeout_ms pass: then
  // -ETIMEDOUT, unless the operation reports what it did by then. timeout_ms <= 0: no bound.
  // No timer per operation: the ring keeps one watchdog timeout in flight (armed with the first
  // bounded operation, left armed when the operation completes, re-armed when it fires before
  // the operation's deadline), so a receive that completes costs no timer set-up and no second
  // completion to reap (a linked timeout costs both, on every read that waits).
  template <class Prep>
  int run_within(Prep prep, int timeout_ms) {
    if (timeout_ms <= 0) return run(prep);
    if (error_ != 0) return error_;
    const std::int64_t deadline = monotonic_ns() + std::int64_t{timeout_ms} * 1'000'000;
    // A watchdog armed for later than this deadline (a longer bound before) would fire late.
    if (watchdog_armed_ && watchdog_deadline_ns_ > deadline) return run_linked(prep, timeout_ms);
    // The watchdog first (it goes in with the operation): a full queue then leaves nothing of
    // the operation behind. (A watchdog left queued is consistent: armed, absorbed later.)
    if (!watchdog_armed_ && !arm_watchdog(deadline)) return -EBUSY;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return -EBUSY;  // cannot happen: one operation in flight per ring
    prep(sqe);
    io_uring_sqe_set_data64(sqe, kOperation);
    if (const int rc = submit(); rc < 0) return rc;
    bool cancelled = false;
    for (;;) {
      io_uring_cqe seen{};
      if (const int w = next(seen); w < 0) return w;
      if (io_uring_cqe_get_data64(&seen) == kOperation) {
        return cancelled && seen.res == -ECANCELED ? -ETIMEDOUT : seen.res;
      }
      absorb(seen);
      if (watchdog_armed_ || cancelled) continue;
      // The watchdog fired: at the deadline the operation is cancelled, before it the watchdog
      // is armed again (each a call into the kernel, once per bound at most).
      int rc = 0;
      if (monotonic_ns() >= deadline) {
        rc = cancel_operation();
        cancelled = true;
      } else {
        rc = rearm_watchdog(deadline);
      }
      if (rc < 0) {
        // The operation is still in flight and its memory may go when this returns: no later
        // operation may run on this ring, whose next completion could be this one's.
        error_ = rc;
        return rc;
      }
    }
  }

  // Runs one zero-copy send to completion: its result CQE and, when that carries
  // IORING_CQE_F_MORE, the notification CQE (IORING_CQE_F_NOTIF) after which the kernel no
  // longer reads the sent memory. Either may come first. Returns the result (bytes or -errno);
  // `copied` tells whether the notification reported that the kernel copied the bytes anyway.
  template <class Prep>
  int run_zc(Prep prep, bool& copied) {
    copied = false;
    if (error_ != 0) return error_;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return -EBUSY;
    prep(sqe);
    io_uring_sqe_set_data64(sqe, kOperation);
    if (const int rc = submit(); rc < 0) return rc;
    bool have_result = false, more = false, have_notif = false;
    int res = 0;
    const int w = reap([&](const io_uring_cqe& cqe) {
      if (is_notification(cqe, copied)) {
        have_notif = true;
      } else {
        have_result = true;
        res = cqe.res;
        more = (cqe.flags & IORING_CQE_F_MORE) != 0;
      }
      return have_result && (!more || have_notif);
    });
    return w < 0 ? w : res;
  }

  // Posts one operation without entering the kernel: it is submitted with the next run*()
  // (one io_uring_enter for both), or by finish_posted(). Whichever call reaps its completion
  // keeps its result for finish_posted(). One posted operation at a time: -EBUSY while one is
  // not finished. What it borrows stays borrowed until finish_posted() returns.
  template <class Prep>
  int post(Prep prep) {
    if (error_ != 0) return error_;
    if (posted_ != Posted::kNone) return -EBUSY;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return -EBUSY;
    prep(sqe);
    io_uring_sqe_set_data64(sqe, kPosted);
    posted_ = Posted::kQueued;
    return 0;
  }
  // Submits the posted operation now if it still waits (one call into the kernel), without
  // waiting for it: the next reap or finish_posted() takes its completion. 0 or -errno.
  int push_posted();
  // Whether an operation is posted and not yet finished.
  bool has_posted() const { return posted_ != Posted::kNone; }
  // Submits the posted operation if it still waits, waits for its completion, and returns its
  // result (0 when nothing is posted). The ring is then free for the next post().
  int finish_posted();

  // Several operations in flight at once (a striped transfer: one per stripe), on a ring that
  // runs nothing else meanwhile. prepare(tag) gives the SQE of one (null if set-up failed or
  // the queue is full); wait_one() submits what is prepared and waits for one completion,
  // bounded by timeout_ms > 0 (-ETIME when none came; 0 or -errno); each_result(f) takes every
  // completion there is and calls f(tag, res) for each operation's result. A zero-copy
  // send's notification (its result carried IORING_CQE_F_MORE) is taken here: zc_due() counts
  // those still to come, and the caller returns, and its memory may go, only once it is 0;
  // `copied` counts the notifications that said the kernel copied the bytes anyway.
  io_uring_sqe* prepare(std::uint64_t tag);
  int wait_one(int timeout_ms);
  template <class Result>
  void each_result(Result f, std::uint64_t& copied) {
    io_uring_cqe* cqe = nullptr;
    while (io_uring_peek_cqe(&ring_, &cqe) == 0) {
      const io_uring_cqe seen = take(cqe);
      bool zc_copied = false;
      if (is_notification(seen, zc_copied)) {
        --zc_due_;  // the kernel no longer reads that send's memory
        if (zc_copied) ++copied;
        continue;
      }
      if ((seen.flags & IORING_CQE_F_MORE) != 0) ++zc_due_;  // its notification is to come
      f(io_uring_cqe_get_data64(&seen) - kFirstTag, seen.res);
    }
  }
  std::size_t zc_due() const { return zc_due_; }

  // Registers fixed buffers with this ring. Returns 0 or -errno.
  int register_buffers(std::span<const iovec> bufs);

 private:
  enum class Posted { kNone, kQueued, kInFlight, kDone };
  // Submits every prepared SQE and waits for `own` completions, one more when a posted
  // operation goes in with it (so that its completion, which often comes at once, does not end
  // the wait before the caller's own). With SQ polling it only hands the SQEs to the SQ thread.
  int submit(unsigned own = 1);
  int wait(io_uring_cqe*& cqe);      // waits for a CQE, retrying on EINTR
  // Reaps completions until `mine` returns true for one of the caller's own; a posted
  // operation's completion met on the way is kept (posted_result_). Returns 0 or -errno.
  template <class Mine>
  int reap(Mine mine) {
    for (;;) {
      io_uring_cqe seen{};
      if (const int w = next(seen); w < 0) return w;
      if (absorb(seen)) continue;
      if (mine(seen)) return 0;
    }
  }
  // Waits for the next completion, copies it into `seen` and frees its slot (counted).
  int next(io_uring_cqe& seen) {
    io_uring_cqe* cqe = nullptr;
    if (const int w = wait(cqe); w < 0) return w;
    seen = take(cqe);
    return 0;
  }
  // Copies a completion out of the queue and frees its slot (counted).
  io_uring_cqe take(io_uring_cqe* cqe) {
    const io_uring_cqe seen = *cqe;
    io_uring_cqe_seen(&ring_, cqe);
    count_completions();
    return seen;
  }
  // A zero-copy send's notification (true), after which the kernel no longer reads the sent
  // memory; `copied` then tells whether the kernel copied the bytes anyway.
  static bool is_notification(const io_uring_cqe& cqe, bool& copied) {
    if ((cqe.flags & IORING_CQE_F_NOTIF) == 0) return false;
    copied = (static_cast<unsigned>(cqe.res) & IORING_NOTIF_USAGE_ZC_COPIED) != 0;
    return true;
  }
  // Takes a completion that is not a caller's own (true): the posted operation's (kept for
  // finish_posted()), the watchdog's (it is no longer armed) or a cancel request's. False:
  // `seen` is the caller's.
  bool absorb(const io_uring_cqe& seen) {
    switch (io_uring_cqe_get_data64(&seen)) {
      case kPosted:
        posted_result_ = seen.res;
        posted_ = Posted::kDone;
        return true;
      case kWatchdog:
        watchdog_armed_ = false;
        return true;
      case kCancel:
        return true;
      default:
        return false;
    }
  }
  // run_within's watchdog: prepares a timeout at `deadline` (CLOCK_MONOTONIC, ns; armed as
  // the time left until it, so a time namespace's clock offset cannot move it) that the next
  // submission carries; false when the submission queue is full.
  bool arm_watchdog(std::int64_t deadline);
  // Arms it again and submits it: 0 or -errno.
  int rearm_watchdog(std::int64_t deadline);
  // Asks the kernel to cancel the operation in flight: 0 or -errno.
  int cancel_operation();
  // Submits what is prepared without waiting (counted as a call where it enters the kernel).
  int submit_now();
  static std::int64_t monotonic_ns();
  // run_within with a linked timeout: for a bound shorter than the armed watchdog's.
  template <class Prep>
  int run_linked(Prep prep, int timeout_ms) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    io_uring_sqe* timer = sqe != nullptr ? io_uring_get_sqe(&ring_) : nullptr;
    if (timer == nullptr) return -EBUSY;  // cannot happen: one operation in flight per ring
    prep(sqe);
    sqe->flags |= IOSQE_IO_LINK;
    io_uring_sqe_set_data64(sqe, kOperation);
    __kernel_timespec ts{timeout_ms / 1000, static_cast<long long>(timeout_ms % 1000) * 1000000};
    io_uring_prep_link_timeout(timer, &ts, 0);
    io_uring_sqe_set_data64(timer, kTimer);
    if (const int rc = submit(); rc < 0) return rc;
    int res = 0;
    bool fired = false;
    int reaped = 0;
    const int w = reap([&](const io_uring_cqe& cqe) {
      if (io_uring_cqe_get_data64(&cqe) == kOperation) res = cqe.res;
      else fired = cqe.res == -ETIME;
      return ++reaped == 2;
    });
    if (w < 0) return w;
    return fired && res == -ECANCELED ? -ETIMEDOUT : res;
  }

  static constexpr __u64 kOperation = 1, kTimer = 2, kPosted = 3, kWatchdog = 4, kCancel = 5;
  static constexpr __u64 kFirstTag = 16;  // prepare()'s tags start here, clear of the above
  std::size_t zc_due_ = 0;  // prepare()'s zero-copy sends whose notification is still to come
  io_uring ring_{};
  int error_ = 0;
  Posted posted_ = Posted::kNone;
  bool sq_polled_ = false;  // the process's SQ thread polls this ring's submission queue
  int posted_result_ = 0;
  bool watchdog_armed_ = false;           // a watchdog timeout is in flight
  std::int64_t watchdog_deadline_ns_ = 0;  // when it fires (CLOCK_MONOTONIC)
  __kernel_timespec watchdog_ts_{};        // its deadline, read by the kernel at submission
};

}  // namespace rig::engine
