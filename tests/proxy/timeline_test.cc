// The page's Timeline section: signaled, sleep, and the word's invariants (1: it never
// decreases, and holds v only after every byte of values <= v has landed).
#include <atomic>
#include <cstring>
#include <thread>

#include "fixture.h"

namespace rig::test {
namespace {

class Timeline : public AgentSuite {};

TEST_F(Timeline, SignaledReadsTheWord) {
  Driven dev(*link_, 1, 41);
  EXPECT_EQ(dev->signaled(), 41u);
}

TEST_F(Timeline, SleepReturnsAtOnceWhenTheWordDiffersFromSeen) {
  Driven dev(*link_, 1, 5);
  const auto t0 = std::chrono::steady_clock::now();
  dev->sleep(4, 10000);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST_F(Timeline, SleepReturnsByStillMsWhenNothingMoves) {
  Driven dev(*link_, 1);
  const auto t0 = std::chrono::steady_clock::now();
  dev->sleep(0, 30);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, std::chrono::milliseconds(30));
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST_F(Timeline, SleepWakesWhenTheWordMoves) {
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  Work w;
  w.between(*r, 0, *r, 0, 64);
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t v = dev.run(w);
  while (dev->signaled() < v) dev->sleep(dev->signaled(), 120000);
  EXPECT_EQ(dev->signaled(), v);
  // It returned on the word's change, not on still_ms.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
}

TEST_F(Timeline, SleepRaisesFaultOnceTheJobFailedBeforeOrMeanwhileAndAgainAfter) {
  Driven dev(*link_, 1);
  std::thread failer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    job_->fail("failed meanwhile");
  });
  EXPECT_THROW(dev->sleep(0, 10000), edge::Fault);  // meanwhile
  failer.join();
  try {
    dev->sleep(0, 10000);  // before: the same fault again
    FAIL();
  } catch (const edge::Fault& f) {
    EXPECT_STREQ(f.what(), "failed meanwhile");
  }
}

TEST_F(Timeline, AReaderThatSeesVSeesEveryByteOfValuesUpToV) {
  // Many values, each copying a distinct pattern into its own slice; a reader thread loads the
  // word with acquire and checks every slice of every value it covers.
  constexpr std::size_t kValues = 200, kSlice = 4096;
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, kValues * kSlice);
  ASSERT_TRUE(r);
  std::vector<std::byte> up(kValues * kSlice), down(kValues * kSlice, std::byte{0});
  for (std::size_t i = 0; i < up.size(); ++i) up[i] = static_cast<std::byte>((i / kSlice) + 1);
  Work fill;
  fill.to_device(up.data(), *r, 0, up.size());
  const std::uint64_t base = dev.run(fill);
  std::atomic<bool> stop{false}, started{false};
  std::atomic<std::uint64_t> checks{0};
  std::thread reader([&] {
    started.store(true, std::memory_order_release);
    while (!stop.load(std::memory_order_acquire)) {
      const std::uint64_t seen = dev->signaled();
      const std::uint64_t covered = seen > base ? seen - base : 0;
      for (std::size_t s = 0; s < covered; ++s) {
        ASSERT_EQ(down[s * kSlice + kSlice - 1], static_cast<std::byte>(s + 1)) << "value " << base + s + 1;
      }
      checks.fetch_add(1, std::memory_order_relaxed);
    }
  });
  while (!started.load(std::memory_order_acquire)) std::this_thread::yield();
  std::uint64_t last = 0;
  for (std::size_t s = 0; s < kValues; ++s) {
    Work w;
    w.to_host(*r, s * kSlice, down.data() + s * kSlice, kSlice);
    last = dev.run(w);
  }
  dev.wait(last);
  stop.store(true, std::memory_order_release);
  reader.join();
  EXPECT_EQ(up, down);
  EXPECT_GT(checks.load(), 0u);
}

TEST_F(Timeline, TheWordNeverDecreases) {
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  std::atomic<bool> stop{false};
  std::thread watcher([&] {
    std::uint64_t prev = 0;
    while (!stop.load(std::memory_order_acquire)) {
      const std::uint64_t now = dev->signaled();
      ASSERT_GE(now, prev);
      prev = now;
    }
  });
  std::uint64_t last = 0;
  for (int i = 0; i < 2000; ++i) {
    Work w;
    w.between(*r, 0, *r, 0, 64);
    last = dev.run(w);
  }
  dev.wait(last);
  stop.store(true, std::memory_order_release);
  watcher.join();
}

}  // namespace
}  // namespace rig::test
