// SQ polling (engine::sq_polling(); RIG_SQPOLL=1 forces it on, as ctest's engine_tests_sqpoll
// and proxy_tests_sqpoll do on this 2-core machine): every ring of the process shares one
// SQ-polling kernel thread, and transfers stay whole and in order on it. Without it, a send by
// copy skips the ring: one sendmsg(2).
#include <gtest/gtest.h>

#include <dirent.h>

#include <fstream>
#include <string>
#include <vector>

#include "rig/engine/socket.h"
#include "rig/engine/syscall_count.h"
#include "socket_pair.h"

namespace rig::engine {
namespace {

// This process's threads whose name starts with `prefix`.
int threads_named(const std::string& prefix) {
  int n = 0;
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return -1;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind(prefix, 0) == 0) ++n;
  }
  ::closedir(d);
  return n;
}

TEST(SqPolling, EveryRingOfTheProcessSharesOneSqThread) {
  if (!uring_available()) GTEST_SKIP() << "no io_uring here";
  if (!sq_polling()) GTEST_SKIP() << "SQ polling is off here (fewer than 8 CPUs; RIG_SQPOLL=1 forces it)";
  std::vector<Pair> pairs;
  for (int i = 0; i < 4; ++i) {
    pairs.push_back(connected(Backend::kUring));
    const char m[] = "sq";
    const iovec v{const_cast<char*>(m), sizeof m};
    ASSERT_EQ(pairs.back().a->send_all({&v, 1}), 0);  // each socket's send ring is made
    char got[sizeof m];
    const iovec into{got, sizeof got};
    ASSERT_EQ(pairs.back().b->recv_all({&into, 1}), 0);
    EXPECT_STREQ(got, "sq");
  }
  EXPECT_EQ(threads_named("iou-sqp-"), 1);
}

TEST(SqPolling, WithoutItASendByCopyIsOneSendmsgAndNoCallIntoTheRing) {
  if (!uring_available()) GTEST_SKIP() << "no io_uring here";
  if (sq_polling()) GTEST_SKIP() << "SQ polling is on here: sends by copy go through the ring";
  Pair p = connected(Backend::kUring);
  const std::vector<char> data(64 * 1024, 's');
  const iovec v{const_cast<char*>(data.data()), data.size()};
  const ThreadSyscalls& mine = this_thread_syscalls();
  // relaxed: this thread's own statistics.
  const std::uint64_t calls = mine.calls.load(std::memory_order_relaxed);
  const std::uint64_t enters = mine.ring_enters.load(std::memory_order_relaxed);
  ASSERT_EQ(p.a->send_all({&v, 1}), 0);  // fits the socket's buffers: one call takes it all
  EXPECT_EQ(mine.calls.load(std::memory_order_relaxed) - calls, 1u);
  EXPECT_EQ(mine.ring_enters.load(std::memory_order_relaxed) - enters, 0u);
  std::vector<char> got(data.size());
  const iovec into{got.data(), got.size()};
  ASSERT_EQ(p.b->recv_all({&into, 1}), 0);
  EXPECT_EQ(got, data);
}

}  // namespace
}  // namespace rig::engine
