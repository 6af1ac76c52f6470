// Zero-copy sends and the staging pool, end to end on loopback with a real rig-agent: the
// threshold is forced down to 64 KiB on both ends (on loopback it is off by default), and
// copies both ways, rows end to end and strided, must land byte-exact; then the same with
// zero-copy off and with the plain backend.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "link_core.h"
#include "agent_process.h"
#include "random_bytes.h"
#include "run_and_wait.h"
#include "rig/engine/socket.h"
#include "rig/engine/connection.h"
#include "rig/engine/staging_pool.h"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"
#include "rig/remote/proxy.h"

namespace rig::test {
using namespace rig::harness;
namespace {

constexpr std::size_t kZc = 64 * 1024;

struct Case {
  const char* name;
  remote::Backend backend;
  std::size_t zc_bytes;  // both ends
};

class ZeroCopyTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    const Case& c = GetParam();
    if (c.backend == remote::Backend::kUring && !engine::uring_available()) {
      GTEST_FAIL() << "io_uring is not available on this machine";
    }
    agent_ = std::make_unique<AgentProcess>(std::vector<std::string>{
        "--backend", c.backend == remote::Backend::kUring ? "uring" : "plain", "--send-zc-bytes",
        std::to_string(c.zc_bytes), "--device-budget", std::to_string(64u << 20)});
    job_ = remote::Job::create();
    remote::LinkOptions options;
    options.backend = c.backend;
    options.send_zc_bytes = c.zc_bytes;
    link_ = &job_->connect(agent_->endpoint(), options);
  }
  void TearDown() override {
    job_.reset();
    agent_.reset();
  }
  // Copies `rows` rows of `row` bytes at `pitch` from `up` to the region and back into a
  // buffer whose gaps hold 0x5a; checks every row and that no gap was written.
  static void strided_round_trip(Driven& dev, const remote::Region& region, const std::vector<std::byte>& up,
                                 std::uint64_t rows, std::uint64_t row, std::uint64_t pitch) {
    std::vector<std::byte> down(rows * pitch, std::byte{0x5a});
    Work w;
    w.copy(rig_copy{host_side(up.data()), region_side(region, 0), rows, row, pitch, pitch});
    w.copy(rig_copy{region_side(region, 0), host_side(down.data()), rows, row, pitch, pitch});
    run_and_wait(dev, w);
    for (std::uint64_t r = 0; r < rows; ++r) {
      ASSERT_EQ(0, std::memcmp(up.data() + r * pitch, down.data() + r * pitch, row)) << "row " << r;
      ASSERT_EQ(down[r * pitch + row], std::byte{0x5a}) << "gap of row " << r << " was written";
    }
  }
  bool zc_expected() const { return GetParam().backend == remote::Backend::kUring && GetParam().zc_bytes > 0; }
  remote::LinkCounters counters() const { return link_->counters(); }

  std::unique_ptr<AgentProcess> agent_;
  std::shared_ptr<remote::Job> job_;
  remote::Link* link_ = nullptr;
};

TEST_P(ZeroCopyTest, ContiguousCopiesBothWaysLandExact) {
  constexpr std::size_t kBytes = 16u << 20;
  std::vector<std::byte> down(kBytes);
  Driven dev(*link_, 1);
  const auto region = dev->alloc(edge::Memory::kDevice, kBytes);
  ASSERT_TRUE(region.has_value());
  const auto up = random_bytes(kBytes, 41);
  const std::uint64_t zc0 = counters().zc_sends;
  Work w;
  w.to_device(up.data(), *region, 0, kBytes).to_host(*region, 0, down.data(), kBytes);
  dev.wait(dev.run(w));
  EXPECT_EQ(0, std::memcmp(up.data(), down.data(), kBytes));
  if (zc_expected()) {
    EXPECT_GE(counters().zc_sends - zc0, 1u);  // 4 MiB chunks, each over 64 KiB
  } else {
    EXPECT_EQ(counters().zc_sends, zc0);
  }
  EXPECT_EQ(counters().zc_fallbacks, 0u);
  EXPECT_LE(counters().zc_copied, counters().zc_sends);
  RecordProperty("zc_sends", std::to_string(counters().zc_sends));
  RecordProperty("zc_copied", std::to_string(counters().zc_copied));
}

TEST_P(ZeroCopyTest, StridedCopyFromHereIsPackedIntoThePoolAndLandsExact) {
  // 1024 rows of 6 KiB, 10 KiB apart: 6 MiB packed, two chunks; then back into other rows.
  constexpr std::uint64_t kRows = 1024, kRow = 6144, kPitch = 10240, kPacked = kRows * kRow;
  Driven dev(*link_, 1);
  const auto region = dev->alloc(edge::Memory::kDevice, kRows * kPitch);
  ASSERT_TRUE(region.has_value());
  const auto up = random_bytes(kRows * kPitch, 43);
  for (unsigned round = 0; round < 3; ++round) {
    const std::uint64_t staged0 = counters().bytes_staged, zc0 = counters().zc_sends;
    strided_round_trip(dev, *region, up, kRows, kRow, kPitch);
    if (HasFatalFailure()) return;
    EXPECT_EQ(counters().bytes_staged - staged0, kPacked);
    if (zc_expected()) {
      EXPECT_EQ(counters().zc_sends - zc0, 2u) << "each packed chunk, zero-copy";
    } else {
      EXPECT_EQ(counters().zc_sends, zc0);
    }
  }
  // Three submits, two chunks each: one chunk allocated, reused by every piece.
  EXPECT_EQ(counters().staging_chunks_allocated, 1u);
  EXPECT_EQ(remote::LinkCore::of(*link_).connection().staging().chunks(), 1u);
  if (GetParam().backend == remote::Backend::kUring &&
      engine::memlock_limit() / 2 >= engine::StagingPool::kChunkBytes) {
    EXPECT_EQ(counters().staging_registered_bytes, engine::StagingPool::kChunkBytes);
    EXPECT_EQ(remote::LinkCore::of(*link_).connection().staging().registration(), 0);
  } else {
    EXPECT_EQ(counters().staging_registered_bytes, 0u);
    EXPECT_NE(remote::LinkCore::of(*link_).connection().staging().registration(), 0);
  }
}

TEST_P(ZeroCopyTest, AStagingAllocatorIsUsedInsteadOfThePool) {
  static std::atomic<int> allocations{0};  // the submitting thread only; atomic for clarity
  allocations.store(0);
  remote::LinkOptions options;
  options.backend = GetParam().backend;
  options.send_zc_bytes = GetParam().zc_bytes;
  options.staging.allocate = [](std::size_t n) -> void* {
    allocations.fetch_add(1, std::memory_order_relaxed);
    return std::malloc(n);
  };
  options.staging.release = [](void* p) { std::free(p); };
  remote::Link& link = job_->connect(agent_->endpoint(), options);
  Driven dev(link, 1);
  constexpr std::uint64_t kRows = 512, kRow = 4096, kPitch = 8192;
  const auto region = dev->alloc(edge::Memory::kDevice, kRows * kPitch);
  ASSERT_TRUE(region.has_value());
  const auto up = random_bytes(kRows * kPitch, 47);
  strided_round_trip(dev, *region, up, kRows, kRow, kPitch);
  EXPECT_EQ(allocations.load(), 1);
  EXPECT_EQ(link.counters().staging_chunks_allocated, 0u);
}

INSTANTIATE_TEST_SUITE_P(Sends, ZeroCopyTest,
                         ::testing::Values(Case{"UringZeroCopyAt64KiB", remote::Backend::kUring, kZc},
                                           Case{"UringZeroCopyOff", remote::Backend::kUring, 0},
                                           Case{"Plain", remote::Backend::kPlain, kZc}),
                         [](const auto& info) { return std::string(info.param.name); });

// The default pool's out-of-memory path: chunks that no allocation can give (4 PiB each) make
// prepare -ENOMEM; nothing is counted or made ready, so the next prepare asks again (and says
// -ENOMEM again); a pool whose chunks fit is ready at once. Submit answers "out of memory for a
// hand-over" for a nonzero prepare.
TEST(StagingPool, ChunksThatCannotBeAllocatedAreENOMEMAndAskedForAgainByTheNextPrepare) {
  engine::Counters counters;
  engine::StagingPool none(1, std::size_t{1} << 52);
  EXPECT_EQ(none.prepare(counters), -ENOMEM);
  EXPECT_EQ(none.prepare(counters), -ENOMEM);
  EXPECT_EQ(counters.staging_chunks_allocated.load(), 0u);
  engine::StagingPool fits(2, 4096);
  EXPECT_EQ(fits.prepare(counters), 0);
  EXPECT_EQ(counters.staging_chunks_allocated.load(), 2u);
  EXPECT_EQ(fits.prepare(counters), 0);
  EXPECT_EQ(counters.staging_chunks_allocated.load(), 2u);  // allocated once, then reused
}

}  // namespace
}  // namespace rig::test
