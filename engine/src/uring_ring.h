// One io_uring ring that runs one operation at a time to completion: the caller submits its SQE
// and reaps its own CQEs (for a zero-copy send, both the result and the notification) before it
// returns, so nothing is ever left in flight for a later, unrelated caller to reap.
// Private to the io_uring backend.
#pragma once

#include <liburing.h>

#include <cerrno>
#include <span>

namespace rig::engine {

// liburing 2.3 lacks the usage report of zero-copy sends (kernel 6.2).
#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

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

  // Runs one prepared operation to completion and returns its result.
  template <class Prep>
  int run(Prep prep) {
    if (error_ != 0) return error_;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return -EBUSY;  // cannot happen: one operation in flight per ring
    prep(sqe);
    const int rc = submit();
    if (rc < 0) return rc;
    io_uring_cqe* cqe = nullptr;
    if (const int w = wait(cqe); w < 0) return w;
    const int res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    return res;
  }

  // Runs one prepared operation as run() does, cancelled once timeout_ms pass (a linked
  // timeout): then -ETIMEDOUT, unless the operation reports what it did by then. timeout_ms
  // <= 0: no bound. Reaps both completions before it returns.
  template <class Prep>
  int run_within(Prep prep, int timeout_ms) {
    if (timeout_ms <= 0) return run(prep);
    if (error_ != 0) return error_;
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
    for (int reaped = 0; reaped < 2; ++reaped) {
      io_uring_cqe* cqe = nullptr;
      if (const int w = wait(cqe); w < 0) return w;
      if (io_uring_cqe_get_data64(cqe) == kOperation) res = cqe->res;
      else fired = cqe->res == -ETIME;
      io_uring_cqe_seen(&ring_, cqe);
    }
    return fired && res == -ECANCELED ? -ETIMEDOUT : res;
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
    if (const int rc = submit(); rc < 0) return rc;
    bool have_result = false, more = false, have_notif = false;
    int res = 0;
    while (!have_result || (more && !have_notif)) {
      io_uring_cqe* cqe = nullptr;
      if (const int w = wait(cqe); w < 0) return w;
      if ((cqe->flags & IORING_CQE_F_NOTIF) != 0) {
        have_notif = true;
        copied = (static_cast<unsigned>(cqe->res) & IORING_NOTIF_USAGE_ZC_COPIED) != 0;
      } else {
        have_result = true;
        res = cqe->res;
        more = (cqe->flags & IORING_CQE_F_MORE) != 0;
      }
      io_uring_cqe_seen(&ring_, cqe);
    }
    return res;
  }

  // The ring itself, for a caller that keeps several operations in flight (a striped transfer);
  // it must reap every CQE of what it submitted before it returns. Null if set-up failed.
  io_uring* raw() { return error_ == 0 ? &ring_ : nullptr; }

  // Registers fixed buffers with this ring. Returns 0 or -errno.
  int register_buffers(std::span<const iovec> bufs);

 private:
  int submit();                      // submits the one prepared SQE
  int wait(io_uring_cqe*& cqe);      // waits for a CQE, retrying on EINTR

  static constexpr __u64 kOperation = 1, kTimer = 2;
  io_uring ring_{};
  int error_ = 0;
};

}  // namespace rig::engine
