// The pinning contract that the CUDA backend's cuMemHostRegister relies on, run here with a
// recording HostPinning. The staging pool: every buffer made, at every size, is whole pages and
// pinned once, reuse pins nothing, and every buffer is unpinned exactly once before it is
// freed, whether the spares are full or the pool goes. The host's objects: whole pages, pinned
// while they live.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>

#include "devices/device_host.h"
#include "devices/host_bytes.h"
#include "exec/staging.h"

namespace rig::agent {
namespace {

bool owns_its_pages(const std::byte* p) { return reinterpret_cast<std::uintptr_t>(p) % page_bytes() == 0; }

struct RecordingPinning final : HostPinning {
  std::map<std::byte*, int> pins;  // pins minus unpins, per buffer
  int made = 0;
  int not_whole_pages = 0;  // pins of memory that shares a page: cuMemHostRegister would refuse
  void pin(std::byte* p, std::uint64_t) noexcept override {
    ++pins[p];
    ++made;
    if (!owns_its_pages(p)) ++not_whole_pages;
  }
  void unpin(std::byte* p) noexcept override { --pins[p]; }
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
    JobStaging pool(~0ull, pinning);
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
  JobStaging pool(~0ull, pinning);
  std::uint64_t cap_a = 0, cap_b = 0;
  auto a = pool.take(JobStaging::kSpareBytes, cap_a);
  auto b = pool.take(4096, cap_b);
  ASSERT_TRUE(a && b);
  std::byte* freed = b.get();
  pool.give(std::move(a), cap_a);  // fills the spares
  pool.give(std::move(b), cap_b);  // freed
  EXPECT_EQ(pinning->pins[freed], 0);
  EXPECT_EQ(pool.spare_bytes(), JobStaging::kSpareBytes);
}

TEST(StagingPinning, ATinyBufferIsWholePagesAndPinnedSoItsCopyNeedNotWaitForTheStream) {
  auto pinning = std::make_shared<RecordingPinning>();
  JobStaging pool(~0ull, pinning);
  std::uint64_t cap = 0;
  auto a = pool.take(64, cap);
  ASSERT_TRUE(a);
  EXPECT_EQ(cap, page_bytes());
  EXPECT_EQ(pool.in_use(), page_bytes()) << "the limit counts the pages pinned";
  EXPECT_EQ(pinning->pins[a.get()], 1);
  EXPECT_EQ(pinning->not_whole_pages, 0);
  pool.give(std::move(a), cap);
}

TEST(StagingPinning, ThePinnedPagesCountAgainstTheLimit) {
  JobStaging pool(page_bytes(), std::make_shared<RecordingPinning>());
  EXPECT_TRUE(pool.admits(1));
  std::uint64_t cap = 0;
  auto a = pool.take(1, cap);
  ASSERT_TRUE(a);
  EXPECT_FALSE(pool.admits(1)) << "one byte took a page";
  EXPECT_FALSE(pool.take(1, cap));
  pool.give(std::move(a), cap);
}

TEST(StagingReuse, ATinyCopyLeavesALargeSpareForALargeCopy) {
  JobStaging pool;
  std::uint64_t big_cap = 0, cap = 0;
  auto big = pool.take(1 << 20, big_cap);
  ASSERT_TRUE(big);
  std::byte* large = big.get();
  pool.give(std::move(big), big_cap);
  auto tiny = pool.take(64, cap);
  ASSERT_TRUE(tiny);
  EXPECT_NE(tiny.get(), large);
  auto again = pool.take(1 << 20, cap);
  EXPECT_EQ(again.get(), large);
  pool.give(std::move(tiny), 64);
  pool.give(std::move(again), cap);
}

TEST(StagingReuse, ASpareTheLimitCannotHoldIsNotReused) {
  const std::uint64_t mib = 1 << 20;
  JobStaging pool(mib + 8192);
  std::uint64_t cap_large = 0, cap_held = 0, cap = 0;
  auto large = pool.take(mib, cap_large);
  ASSERT_TRUE(large);
  std::byte* spare = large.get();
  pool.give(std::move(large), cap_large);
  auto held = pool.take(12 << 10, cap_held);  // the large spare is left for a large copy
  ASSERT_TRUE(held);
  auto next = pool.take(600 << 10, cap);  // the spare would hold it, but not within the limit
  ASSERT_TRUE(next);
  EXPECT_NE(next.get(), spare);
  EXPECT_LE(pool.in_use(), pool.limit());
  pool.give(std::move(next), cap);
  pool.give(std::move(held), cap_held);
}

TEST(StagingPinning, WithoutPinningNothingChanges) {
  JobStaging pool(8192);
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
  auto m = host.allocate(100);
  ASSERT_TRUE(m && before);
  EXPECT_EQ(pinning->made, 1);
  EXPECT_EQ(pinning->not_whole_pages, 0) << "a small object shared its page: the GPU could not pin it";
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
