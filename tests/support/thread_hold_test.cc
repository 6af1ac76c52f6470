// ThreadHold, the tests' way to hold one named thread still while they force an order.
#include "thread_hold.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "process_facts.h"

namespace rig::test {
namespace {

using namespace std::chrono_literals;

TEST(ThreadHold, AHeldThreadMakesNoProgressUntilLetGo) {
  std::atomic<std::uint64_t> rounds{0};
  std::atomic<bool> stop{false};
  std::thread t([&] {
    ::pthread_setname_np(::pthread_self(), "rig-test-held");
    while (!stop.load(std::memory_order_acquire)) {  // acquire: pairs with the test's release
      rounds.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::sleep_for(100us);
    }
  });
  ASSERT_GE(within(10s, [&] { return rounds.load(std::memory_order_relaxed) > 0; }).count(), 0);  // named
  {
    ThreadHold hold("rig-test-held");
    ASSERT_TRUE(hold.held()) << hold.error();
    const std::uint64_t at = rounds.load(std::memory_order_relaxed);
    std::this_thread::sleep_for(50ms);  // a running thread makes hundreds of rounds meanwhile
    EXPECT_EQ(rounds.load(std::memory_order_relaxed), at) << "the held thread went on";
    hold.let_go();
    EXPECT_GE(within(10s, [&] { return rounds.load(std::memory_order_relaxed) > at; }).count(), 0)
        << "the thread let go never went on";
  }
  stop.store(true, std::memory_order_release);
  t.join();
}

TEST(ThreadHold, ANameNoThreadHasIsAnErrorThatSaysSo) {
  ThreadHold hold("rig-no-such");
  EXPECT_FALSE(hold.held());
  EXPECT_EQ(hold.error(), "0 threads named rig-no-such, not one");
}

}  // namespace
}  // namespace rig::test
