#include "thread_hold.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <vector>

#include "process_facts.h"

namespace rig::test {
namespace {

// Only lock-free atomics and nanosleep, which a signal handler may use.
std::atomic<int> g_held{0};     // release in the handler; acquire by the test (the thread is held)
std::atomic<int> g_let_go{0};   // release by the test; acquire in the handler

void hold_this_thread(int) {
  const int saved_errno = errno;  // the interrupted code's (nanosleep may set it)
  g_held.store(1, std::memory_order_release);
  while (g_let_go.load(std::memory_order_acquire) == 0) {
    const timespec ms{0, 1'000'000};
    ::nanosleep(&ms, nullptr);
  }
  errno = saved_errno;
}

std::vector<pid_t> threads_named(const std::string& name) {
  std::vector<pid_t> tids;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string got;
    if (std::getline(comm, got) && got == name) tids.push_back(std::stoi(task.path().filename().string()));
  }
  return tids;
}

}  // namespace

ThreadHold::ThreadHold(const std::string& name) {
  static_assert(std::atomic<int>::is_always_lock_free);
  const std::vector<pid_t> tids = threads_named(name);
  if (tids.size() != 1) {
    error_ = std::to_string(tids.size()) + " threads named " + name + ", not one";
    return;
  }
  g_held.store(0, std::memory_order_relaxed);
  g_let_go.store(0, std::memory_order_relaxed);
  struct sigaction hold {};
  hold.sa_handler = hold_this_thread;
  ::sigemptyset(&hold.sa_mask);
  hold.sa_flags = SA_RESTART;
  if (::sigaction(SIGUSR2, &hold, &before_) != 0) {
    error_ = "sigaction failed";
    return;
  }
  installed_ = true;
  if (::syscall(SYS_tgkill, ::getpid(), tids[0], SIGUSR2) != 0) {
    error_ = "tgkill failed";
    return;
  }
  const auto took = within(std::chrono::seconds(10), [] { return g_held.load(std::memory_order_acquire) == 1; });
  if (took.count() < 0) error_ = "thread " + name + " did not take the signal within 10 s";
}

void ThreadHold::let_go() { g_let_go.store(1, std::memory_order_release); }  // pairs with the handler's acquire

ThreadHold::~ThreadHold() {
  if (!installed_) return;
  let_go();
  // A thread inside the handler finishes it whatever the disposition. A signal sent but never
  // taken may still come: the handler stays (let go, it returns at once) rather than SIGUSR2's
  // default, which would end the process.
  if (held()) ::sigaction(SIGUSR2, &before_, nullptr);
}

}  // namespace rig::test
