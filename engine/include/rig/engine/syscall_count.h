// The system calls the engine makes, counted at each call into the kernel on a transfer path
// (sends, receives, readiness waits, io_uring_enter, futex waits and wakes), per thread, so a
// benchmark can quote calls per tiny handover and per GiB moved without perf. Set-up calls
// (socket, connect, setsockopt, ring set-up) are not counted: they are paid once per link.
//
// io_uring: a submit always enters the kernel (no SQ polling here); a wait for a completion
// enters only when none is ready, and is counted only then.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "rig/export.h"

namespace rig::engine {

// One thread's count. Written by its thread only; read by any thread as a statistic.
struct ThreadSyscalls {
  pid_t tid = 0;
  std::atomic<std::uint64_t> calls{0};
  // io_uring's batch size: the io_uring_enter calls that submit or wait on a transfer path, and
  // the completions reaped; their ratio is the completions per call into the ring.
  std::atomic<std::uint64_t> ring_enters{0};
  std::atomic<std::uint64_t> completions{0};
};

// This thread's counter (registered on its first use; never freed, so a count outlives its
// thread).
RIG_API ThreadSyscalls& this_thread_syscalls();

namespace detail {
// Adds `n` to one of this thread's counts. Single writer: a relaxed load and store, no locked
// instruction. Relaxed: a statistic, read with relaxed loads by syscall_counts() and
// ring_counts_total(); it orders nothing.
inline void add_mine(std::atomic<std::uint64_t> ThreadSyscalls::*count, std::uint64_t n) {
  thread_local ThreadSyscalls& mine = this_thread_syscalls();
  std::atomic<std::uint64_t>& c = mine.*count;
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
}  // namespace detail

// Counts `n` calls into the kernel made by this thread.
inline void count_syscall(std::uint64_t n = 1) { detail::add_mine(&ThreadSyscalls::calls, n); }

// Counts one io_uring_enter on a transfer path: a call into the kernel and into the ring.
inline void count_ring_enter() {
  count_syscall();
  detail::add_mine(&ThreadSyscalls::ring_enters, 1);
}

// Counts `n` completions reaped from an io_uring.
inline void count_completions(std::uint64_t n = 1) { detail::add_mine(&ThreadSyscalls::completions, n); }

struct RingCounts {
  std::uint64_t enters = 0;
  std::uint64_t completions = 0;
};
// The sums over every thread of this process.
RIG_API RingCounts ring_counts_total();

struct SyscallCount {
  pid_t tid;
  std::uint64_t calls;
};
// Every thread of this process that counted a call, with its count so far.
RIG_API std::vector<SyscallCount> syscall_counts();
// The sum over every thread of this process.
RIG_API std::uint64_t syscalls_total();

}  // namespace rig::engine
