// SQ polling (engine::sq_polling(); RIG_SQPOLL=1 forces it on, as ctest's engine_tests_sqpoll
// and proxy_tests_sqpoll do on this 2-core machine): every ring of the process shares one
// SQ-polling kernel thread, and transfers stay whole and in order on it. Without it, a small
// send by copy skips the ring (one sendmsg(2)), and a large one goes through it.
#include <gtest/gtest.h>

#include <dirent.h>

#include <fstream>
#include <string>
#include <thread>
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
  const std::vector<char> data(16 * 1024, 's');  // below UringSocket's kRingSendMinBytes, 64 KiB
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

TEST(SqPolling, WithoutItALargeSendByCopyGoesThroughTheRingAndNoSendmsg) {
  if (!uring_available()) GTEST_SKIP() << "no io_uring here";
  if (sq_polling()) GTEST_SKIP() << "SQ polling is on here: every send by copy goes through the ring";
  SendOptions by_copy;
  by_copy.zc_bytes = 0;  // never zero-copy: the choice under test is the one between copies
  Pair p = connected(Backend::kUring, by_copy);
  // Far more than the socket's buffers hold: the send waits for the reader below.
  std::vector<char> data(8u << 20);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + 7);
  std::vector<char> got(data.size());
  std::thread reader([&] {
    const iovec into{got.data(), got.size()};
    EXPECT_EQ(p.b->recv_all({&into, 1}), 0);
  });
  const iovec v{data.data(), data.size()};
  const ThreadSyscalls& mine = this_thread_syscalls();
  // relaxed: this thread's own statistics.
  const std::uint64_t calls = mine.calls.load(std::memory_order_relaxed);
  const std::uint64_t enters = mine.ring_enters.load(std::memory_order_relaxed);
  const int rc = p.a->send_all({&v, 1});
  const std::uint64_t made = mine.calls.load(std::memory_order_relaxed) - calls;
  const std::uint64_t into_ring = mine.ring_enters.load(std::memory_order_relaxed) - enters;
  reader.join();
  ASSERT_EQ(rc, 0);
  EXPECT_GE(into_ring, 1u) << "the send never entered the ring";
  EXPECT_EQ(made, into_ring) << "calls outside the ring (sendmsg): " << made - into_ring;
  EXPECT_EQ(got, data);
}

}  // namespace
}  // namespace rig::engine
