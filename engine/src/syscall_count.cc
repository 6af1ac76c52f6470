#include "rig/engine/syscall_count.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <deque>
#include <mutex>

namespace rig::engine {
namespace {

// Cold: a thread registers once. A deque keeps every counter where it was made.
struct Registry {
  std::mutex mutex;
  std::deque<ThreadSyscalls> threads;
};

Registry& registry() {
  static auto* r = new Registry;  // never destroyed: threads may count during exit
  return *r;
}

}  // namespace

ThreadSyscalls& this_thread_syscalls() {
  thread_local ThreadSyscalls& mine = [] () -> ThreadSyscalls& {
    Registry& r = registry();
    const std::lock_guard<std::mutex> lock(r.mutex);
    ThreadSyscalls& t = r.threads.emplace_back();
    t.tid = static_cast<pid_t>(::syscall(SYS_gettid));
    return t;
  }();
  return mine;
}

std::vector<SyscallCount> syscall_counts() {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<SyscallCount> out;
  out.reserve(r.threads.size());
  // relaxed: statistics (see count_syscall); the mutex orders the registration itself.
  for (const ThreadSyscalls& t : r.threads) out.push_back({t.tid, t.calls.load(std::memory_order_relaxed)});
  return out;
}

RingCounts ring_counts_total() {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  RingCounts sum;
  // relaxed: statistics (see count_syscall).
  for (const ThreadSyscalls& t : r.threads) {
    sum.enters += t.ring_enters.load(std::memory_order_relaxed);
    sum.completions += t.completions.load(std::memory_order_relaxed);
  }
  return sum;
}

std::uint64_t syscalls_total() {
  std::uint64_t sum = 0;
  for (const SyscallCount& c : syscall_counts()) sum += c.calls;
  return sum;
}

}  // namespace rig::engine
