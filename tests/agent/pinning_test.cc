// The pinning contract that the CUDA backend's cuMemHostRegister relies on, run here with a
// recording HostPinning. The staging pool: every buffer made is pinned once, reuse pins
// nothing, and every buffer is unpinned exactly once before it is freed, whether the spares are
// full or the pool goes. The host's objects: pinned while they live.
#include <gtest/gtest.h>

#include <map>

#include "device_host.h"
#include "staging.h"

namespace rig::agent {
namespace {

struct RecordingPinning final : HostPinning {
  std::map<std::byte*, int> pins;  // pins minus unpins, per buffer
  int made = 0;
  void pin(std::byte* p, std::uint64_t) override {
    ++pins[p];
    ++made;
  }
  void unpin(std::byte* p) override { --pins[p]; }
  bool balanced() const {
    for (const auto& [p, n] : pins) {
      if (n != 0) return false;
    }
    return true;
  }
};

TEST(StagingPinning, EachBufferIsPinnedOnceWhenMadeAndReuseAddsNone) {
  auto pinning = std::make_shared<RecordingPinning>();
  {
    StagingPool pool(~0ull, pinning);
    std::uint64_t cap = 0;
    auto a = pool.take(4096, cap);
    ASSERT_TRUE(a);
    EXPECT_EQ(pinning->pins[a.get()], 1);
    std::byte* first = a.get();
    pool.give(std::move(a), cap);
    auto b = pool.take(1024, cap);  // the spare, reused
    EXPECT_EQ(b.get(), first);
    EXPECT_EQ(pinning->made, 1);
    pool.give(std::move(b), cap);
  }
  EXPECT_TRUE(pinning->balanced()) << "a spare was freed pinned";
}

TEST(StagingPinning, ABufferFreedBecauseTheSparesAreFullIsUnpinnedFirst) {
  auto pinning = std::make_shared<RecordingPinning>();
  StagingPool pool(~0ull, pinning);
  std::uint64_t cap_a = 0, cap_b = 0;
  auto a = pool.take(StagingPool::kSpareBytes, cap_a);
  auto b = pool.take(4096, cap_b);
  ASSERT_TRUE(a && b);
  std::byte* freed = b.get();
  pool.give(std::move(a), cap_a);  // fills the spares
  pool.give(std::move(b), cap_b);  // freed
  EXPECT_EQ(pinning->pins[freed], 0);
  EXPECT_EQ(pool.spare_bytes(), StagingPool::kSpareBytes);
}

TEST(StagingPinning, WithoutPinningNothingChanges) {
  StagingPool pool(8192);
  std::uint64_t cap = 0;
  auto a = pool.take(8192, cap);
  ASSERT_TRUE(a);
  EXPECT_FALSE(pool.take(1, cap));
  pool.give(std::move(a), 8192);
  EXPECT_EQ(pool.in_use(), 0u);
}

TEST(HostObjectPinning, TheHostsMemoryIsPinnedWhileItLivesOnceTheHostHasPinning) {
  auto pinning = std::make_shared<RecordingPinning>();
  HostDevice host(1 << 20, 1);
  auto before = host.allocate(4096);  // made before: never pinned
  host.set_pinning(pinning);
  auto m = host.allocate(8192);
  ASSERT_TRUE(m && before);
  EXPECT_EQ(pinning->made, 1);
  EXPECT_EQ(pinning->pins[m->host()], 1);
  std::shared_ptr<Memory> holder = m;
  m.reset();
  EXPECT_EQ(pinning->pins.begin()->second, 1) << "unpinned while a holder remains";
  holder.reset();
  EXPECT_TRUE(pinning->balanced());
  before.reset();
  EXPECT_EQ(pinning->made, 1);
}

}  // namespace
}  // namespace rig::agent
