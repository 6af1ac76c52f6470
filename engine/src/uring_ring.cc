#include "uring_ring.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <string_view>
#include <thread>

#include "rig/engine/env_settings.h"
#include "rig/engine/socket.h"
#include "rig/engine/syscall_count.h"
#include "spin.h"

#if defined(RIG_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace rig::engine {
namespace {

#if defined(RIG_TSAN)
// liburing maps a ring's memory with raw syscalls that ThreadSanitizer does not see, so when a
// ring is unmapped and a later ring lands at the same address, TSan takes the two rings for one
// memory shared without synchronisation. This object orders every ring's teardown before every
// later ring's set-up, as the kernel's munmap/mmap does.
char g_ring_handoff;
inline void ring_created() { __tsan_acquire(&g_ring_handoff); }
inline void ring_destroyed() { __tsan_release(&g_ring_handoff); }
#else
inline void ring_created() {}
inline void ring_destroyed() {}
#endif

// The ring whose SQ-polling kernel thread every other ring of the process shares
// (IORING_SETUP_ATTACH_WQ): its fd, or -errno if it could not be set up. Made once, kept for
// the process's life.
int sq_thread_anchor() {
  static const int fd = [] {
    static io_uring anchor{};
    io_uring_params p{};
    p.flags = IORING_SETUP_SQPOLL;
    p.sq_thread_idle = kSqThreadIdleMs;
    const int rc = io_uring_queue_init_params(2, &anchor, &p);
    return rc < 0 ? rc : anchor.ring_fd;
  }();
  return fd;
}

int online_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::thread::hardware_concurrency());
}

}  // namespace

bool sq_polling() {
  static const bool on = [] {
    return env_settings()->sq_polling.value_or(online_cpus() >= kSqPollMinCpus);
  }();
  return on;
}

Ring::Ring(Use use, unsigned entries) {
  io_uring_params p{};
  int rc = -EINVAL;
  if (sq_polling() && sq_thread_anchor() >= 0) {
    p.flags = IORING_SETUP_SQPOLL | IORING_SETUP_ATTACH_WQ;
    p.wq_fd = static_cast<__u32>(sq_thread_anchor());
    p.sq_thread_idle = kSqThreadIdleMs;
    rc = io_uring_queue_init_params(entries, &ring_, &p);
    sq_polled_ = rc == 0;
  }
  if (rc < 0 && use == Use::kPerThread) {
    p = io_uring_params{};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    rc = io_uring_queue_init_params(entries, &ring_, &p);
  }
  if (rc < 0) {
    p = io_uring_params{};
    p.flags = IORING_SETUP_COOP_TASKRUN;
    rc = io_uring_queue_init_params(entries, &ring_, &p);
  }
  if (rc < 0) rc = io_uring_queue_init(entries, &ring_, 0);
  error_ = rc < 0 ? rc : 0;
  // A per-thread ring's io_uring_enter then names it by its registered index: no file lookup
  // per call (the tiny-handover profile showed fget among the top kernel symbols). Only there:
  // the index is valid for the registering thread alone, and a shared ring (a socket's send
  // ring) is entered by whichever thread holds the turn. Optional: without it, the fd is used.
  if (error_ == 0 && use == Use::kPerThread) io_uring_register_ring_fd(&ring_);
  ring_created();
}

Ring::~Ring() {
  ring_destroyed();
  if (error_ == 0) io_uring_queue_exit(&ring_);  // also unregisters its fixed buffers
}

int Ring::submit(unsigned own) {
  unsigned wait_nr = own;
  if (posted_ == Posted::kQueued) {
    posted_ = Posted::kInFlight;
    ++wait_nr;
  }
  if (sq_polled_) {
    // The SQ thread takes the SQEs: a call into the kernel only to wake it once it slept
    // (liburing checks the flag again, after its barrier); the completions are waited for
    // one by one (wait()).
    if ((IO_URING_READ_ONCE(*ring_.sq.kflags) & IORING_SQ_NEED_WAKEUP) != 0) count_syscall();
    const int rc = io_uring_submit(&ring_);
    return rc < 0 && rc != -EINTR ? rc : 0;
  }
  count_ring_enter();  // io_uring_enter, which also waits for the first completions
  if (wait_nr > own) {
    // Waiting for the posted send's completion and the caller's own in one call has a trap on
    // a DEFER_TASKRUN ring: the kernel wakes a waiter for "lazy" task work (a send's retry once
    // the peer drained its socket) only when as many items are queued as completions are
    // still awaited. A send that did not complete at once (a full socket buffer) then waits
    // for a second item, and if the peer waits for that send's bytes before it sends what the
    // receive awaits, for ever. So this wait is bounded: after kRideWaitUs the completions are
    // reaped one by one (wait()), each of which any item wakes. The common case, a send that
    // completes at once, never sees the bound.
    __kernel_timespec ts{0, kRideWaitUs * 1000LL};
    io_uring_cqe* ignored = nullptr;
    const int rc = io_uring_submit_and_wait_timeout(&ring_, &ignored, wait_nr, &ts, nullptr);
    return rc < 0 && rc != -EINTR && rc != -ETIME ? rc : 0;
  }
  const int rc = io_uring_submit_and_wait(&ring_, wait_nr);
  return rc < 0 && rc != -EINTR ? rc : 0;
}

int Ring::finish_posted() {
  if (posted_ == Posted::kNone) return 0;
  if (posted_ == Posted::kQueued) {
    if (const int rc = submit(0); rc < 0) return rc;
  }
  // Nothing of a caller's own is in flight here (each run*() reaps its own before it returns),
  // so the only completion to come is the posted one.
  while (posted_ == Posted::kInFlight) {
    io_uring_cqe seen{};
    if (const int w = next(seen); w < 0) return w;
    absorb(seen);
  }
  posted_ = Posted::kNone;
  return posted_result_;
}

int Ring::push_posted() {
  if (posted_ != Posted::kQueued) return 0;
  posted_ = Posted::kInFlight;
  return submit_now();
}

std::int64_t Ring::monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

bool Ring::arm_watchdog(std::int64_t deadline) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) return false;
  const std::int64_t left = std::max<std::int64_t>(deadline - monotonic_ns(), 0);
  watchdog_ts_ = {left / 1'000'000'000, left % 1'000'000'000};
  io_uring_prep_timeout(sqe, &watchdog_ts_, 0, 0);
  io_uring_sqe_set_data64(sqe, kWatchdog);
  watchdog_armed_ = true;
  watchdog_deadline_ns_ = deadline;
  return true;
}

int Ring::rearm_watchdog(std::int64_t deadline) {
  if (!arm_watchdog(deadline)) return -EBUSY;
  return submit_now();
}

int Ring::cancel_operation() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) return -EBUSY;
  io_uring_prep_cancel64(sqe, kOperation, 0);
  io_uring_sqe_set_data64(sqe, kCancel);
  return submit_now();
}

int Ring::submit_now() {
  // On an SQ-polled ring only a wake of the sleeping SQ thread enters the kernel (as submit()).
  if (!sq_polled_) {
    count_ring_enter();
  } else if ((IO_URING_READ_ONCE(*ring_.sq.kflags) & IORING_SQ_NEED_WAKEUP) != 0) {
    count_syscall();
  }
  const int rc = io_uring_submit(&ring_);
  return rc < 0 && rc != -EINTR ? rc : 0;
}

int Ring::wait(io_uring_cqe*& cqe) {
  if (io_uring_peek_cqe(&ring_, &cqe) == 0) return 0;  // ready: no call into the kernel
  if (sq_polled_) {
    // The SQ thread runs the operation on another core: most end within microseconds, so
    // look a while before sleeping in the kernel.
    if (spin_for(kSqPollSpinUs, [&] { return io_uring_peek_cqe(&ring_, &cqe) == 0; })) return 0;
  }
  for (;;) {
    count_ring_enter();
    const int rc = io_uring_wait_cqe(&ring_, &cqe);
    if (rc != -EINTR) return rc;
  }
}

io_uring_sqe* Ring::prepare(std::uint64_t tag) {
  if (error_ != 0) return nullptr;
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe != nullptr) io_uring_sqe_set_data64(sqe, kFirstTag + tag);
  return sqe;
}

int Ring::wait_one(int timeout_ms) {
  count_ring_enter();  // io_uring_enter: submits what is prepared and waits for one completion
  io_uring_cqe* ignored = nullptr;
  int rc = 0;
  if (timeout_ms > 0) {
    __kernel_timespec ts{timeout_ms / 1000, (timeout_ms % 1000) * 1'000'000LL};
    rc = io_uring_submit_and_wait_timeout(&ring_, &ignored, 1, &ts, nullptr);
  } else {
    rc = io_uring_submit_and_wait(&ring_, 1);
  }
  if (rc == -ETIME) return rc;
  return rc < 0 && rc != -EINTR ? rc : 0;
}

int Ring::register_buffers(std::span<const iovec> bufs) {
  if (error_ != 0) return error_;
  return io_uring_register_buffers(&ring_, bufs.data(), static_cast<unsigned>(bufs.size()));
}

}  // namespace rig::engine
