#include "uring_ring.h"

#include "rig/engine/syscall_count.h"

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

}  // namespace

Ring::Ring(Use use, unsigned entries) {
  io_uring_params p{};
  int rc = -EINVAL;
  if (use == Use::kPerThread) {
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

int Ring::submit() {
  unsigned wait_nr = 1;
  if (posted_ == Posted::kQueued) {
    posted_ = Posted::kInFlight;
    wait_nr = 2;
  }
  count_syscall();  // io_uring_enter, which also waits for the first completions
  const int rc = io_uring_submit_and_wait(&ring_, wait_nr);
  return rc < 0 && rc != -EINTR ? rc : 0;
}

int Ring::finish_posted() {
  if (posted_ == Posted::kNone) return 0;
  if (posted_ == Posted::kQueued) {
    count_syscall();
    posted_ = Posted::kInFlight;
    if (const int rc = io_uring_submit_and_wait(&ring_, 1); rc < 0 && rc != -EINTR) return rc;
  }
  // Nothing of a caller's own is in flight here (each run*() reaps its own before it returns),
  // so the only completion to come is the posted one.
  while (posted_ == Posted::kInFlight) {
    io_uring_cqe* cqe = nullptr;
    if (const int w = wait(cqe); w < 0) return w;
    if (io_uring_cqe_get_data64(cqe) == kPosted) {
      posted_result_ = cqe->res;
      posted_ = Posted::kDone;
    }
    io_uring_cqe_seen(&ring_, cqe);
  }
  posted_ = Posted::kNone;
  return posted_result_;
}

int Ring::wait(io_uring_cqe*& cqe) {
  if (io_uring_peek_cqe(&ring_, &cqe) == 0) return 0;  // ready: no call into the kernel
  for (;;) {
    count_syscall();
    const int rc = io_uring_wait_cqe(&ring_, &cqe);
    if (rc != -EINTR) return rc;
  }
}

int Ring::register_buffers(std::span<const iovec> bufs) {
  if (error_ != 0) return error_;
  return io_uring_register_buffers(&ring_, bufs.data(), static_cast<unsigned>(bufs.size()));
}

}  // namespace rig::engine
