// End to end on loopback with a real rig-agent: copies up to a simulated device and back,
// for each socket backend.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <stdexcept>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "agent_process.h"
#include "fixture.h"
#include "link_core.h"
#include "random_bytes.h"
#include "run_and_wait.h"
#include "rig/engine/socket.h"
#include "rig/remote/job.h"
#include "rig/remote/proxy.h"
#include "rig/harness/runtime.h"

namespace rig::test {
using namespace rig::harness;
namespace {

using remote::Job;

// The first n bytes of regions x and y, read back into this process in one handover.
std::pair<std::vector<std::byte>, std::vector<std::byte>> read_back(Driven& dev, const remote::Region& x,
                                                                   const remote::Region& y, std::size_t n) {
  std::vector<std::byte> got_x(n), got_y(n);
  Work back;
  back.to_host(x, 0, got_x.data(), n).to_host(y, 0, got_y.data(), n);
  run_and_wait(dev, back);
  return {std::move(got_x), std::move(got_y)};
}

class CopyTest : public ::testing::TestWithParam<remote::Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == remote::Backend::kUring && !engine::uring_available()) {
      GTEST_FAIL() << "io_uring is not available on this machine";
    }
    agent_ = std::make_unique<AgentProcess>(std::vector<std::string>{
        "--backend", GetParam() == remote::Backend::kUring ? "uring" : "plain"});
    job_ = Job::create();
    remote::LinkOptions options;
    options.backend = GetParam();
    link_ = &job_->connect(agent_->endpoint(), options);
  }
  void TearDown() override {
    job_.reset();
    agent_.reset();
  }

  // An object of `n` bytes on the device, holding `up` (random bytes of `seed`).
  static remote::Region filled_object(Driven& dev, std::size_t n, unsigned seed, std::vector<std::byte>& up) {
    auto region = dev->alloc(edge::Memory::kDevice, n);
    EXPECT_TRUE(region);
    if (!region) throw std::runtime_error("alloc failed");
    up = random_bytes(n, seed);
    Work w;
    w.to_device(up.data(), *region, 0, n);
    dev.wait(dev.run(w));
    return *region;
  }
  // Runs `copy`, work copying `bytes` into this process, and checks that every byte of it was
  // received straight into place, none through the reader's buffer.
  void expect_received_in_place(std::uint64_t bytes, const std::function<void()>& copy, const std::string& what) {
    const std::uint64_t copied0 = link_->counters().payload_bytes_copied;
    const std::uint64_t direct0 = link_->counters().payload_bytes_direct;
    copy();
    EXPECT_EQ(link_->counters().payload_bytes_copied, copied0) << what;
    EXPECT_EQ(link_->counters().payload_bytes_direct - direct0, bytes) << what;
  }

  std::unique_ptr<AgentProcess> agent_;
  std::shared_ptr<Job> job_;
  remote::Link* link_ = nullptr;
};

TEST_P(CopyTest, SixtyFourMiBRoundTripIsExact) {
  constexpr std::size_t kBytes = 64u << 20;
  std::vector<std::byte> down(kBytes, std::byte{0});
  Driven dev(*link_, 1);
  const auto region = dev->alloc(edge::Memory::kDevice, kBytes);
  ASSERT_TRUE(region.has_value());
  const std::vector<std::byte> up = random_bytes(kBytes, 7);

  Work w1;
  w1.to_device(up.data(), *region, 0, kBytes);
  const std::uint64_t v1 = dev.run(w1);
  Work w2;
  w2.to_host(*region, 0, down.data(), kBytes);
  const std::uint64_t v2 = dev.run(w2);
  EXPECT_GT(v2, v1);
  dev.wait(v2);
  EXPECT_EQ(dev->signaled(), v2);
  EXPECT_EQ(0, std::memcmp(up.data(), down.data(), kBytes));
  dev->free(*region);
}

TEST_P(CopyTest, AByteCrossesTheLinkOnce) {
  constexpr std::size_t kBytes = 8u << 20;
  std::vector<std::byte> down(kBytes);
  Driven dev(*link_, 1);
  const auto region = dev->alloc(edge::Memory::kDevice, kBytes);
  ASSERT_TRUE(region.has_value());
  const std::vector<std::byte> up = random_bytes(kBytes, 9);
  const std::uint64_t sent0 = link_->counters().bytes_sent;
  const std::uint64_t recv0 = link_->counters().bytes_received;
  Work w;
  w.to_device(up.data(), *region, 0, kBytes).to_host(*region, 0, down.data(), kBytes);
  dev.wait(dev.run(w));
  const std::uint64_t sent = link_->counters().bytes_sent - sent0;
  const std::uint64_t recv = link_->counters().bytes_received - recv0;
  EXPECT_GE(sent, kBytes);
  EXPECT_LT(sent, kBytes + 4096);  // the payload once, plus headers
  EXPECT_GE(recv, kBytes);
  EXPECT_LT(recv, kBytes + 4096);
  EXPECT_EQ(0, std::memcmp(up.data(), down.data(), kBytes));
}

TEST_P(CopyTest, LargeCopiesIntoThisProcessLandWithZeroUserSpaceCopies) {
  constexpr std::size_t kBytes = 16u << 20;
  Driven dev(*link_, 1);
  std::vector<std::byte> up, down;
  const remote::Region region = filled_object(dev, kBytes, 5, up);
  for (std::uint64_t rows : {1ull, 256ull}) {  // contiguous, and strided rows
    const std::uint64_t pitch = rows == 1 ? kBytes : 2 * kBytes / rows;
    down.assign(rows == 1 ? kBytes : 2 * kBytes, std::byte{0});
    expect_received_in_place(kBytes, [&] {
      Work w;
      w.copy(rig_copy{region_side(region, 0), host_side(down.data()), rows, kBytes / rows, kBytes / rows, pitch});
      dev.wait(dev.run(w));
    }, std::to_string(rows) + " rows");
    for (std::uint64_t r = 0; r < rows; ++r) {
      ASSERT_EQ(0, std::memcmp(down.data() + r * pitch, up.data() + r * (kBytes / rows), kBytes / rows));
    }
  }
}

// The threshold itself: a copy of exactly LinkCore::kZeroCopyBytes into this process, ending at
// its object's last byte, is received straight into place too.
TEST_P(CopyTest, ACopyOfExactlyTheZeroCopySizeLandsWithZeroUserSpaceCopies) {
  constexpr std::size_t kBytes = remote::LinkCore::kZeroCopyBytes, kObject = 3 * kBytes;
  Driven dev(*link_, 1);
  std::vector<std::byte> up;
  const remote::Region region = filled_object(dev, kObject, 11, up);
  for (int round = 0; round < 3; ++round) {  // the same copy again: a later one is no luckier
    std::vector<std::byte> down(kBytes, std::byte{0});
    expect_received_in_place(kBytes, [&] {
      Work w;
      w.to_host(region, kObject - kBytes, down.data(), kBytes);
      dev.wait(dev.run(w));
    }, "round " + std::to_string(round));
    ASSERT_EQ(0, std::memcmp(down.data(), up.data() + kObject - kBytes, kBytes));
  }
}

TEST_P(CopyTest, StridedRowsLandInTheirRows) {
  RIG_NEED_DEVICES(*link_, 2);
  constexpr std::uint64_t kRows = 1024, kRow = 4096, kPitch = 8192;
  std::vector<std::byte> down(kRows * kPitch, std::byte{0x5a});
  Driven dev(*link_, 2);
  const auto region = dev->alloc(edge::Memory::kDevice, kRows * kPitch);
  ASSERT_TRUE(region.has_value());
  const std::vector<std::byte> up = random_bytes(kRows * kPitch, 11);
  Work w;
  w.copy(rig_copy{host_side(up.data()), region_side(*region, 0), kRows, kRow, kPitch, kPitch});
  w.copy(rig_copy{region_side(*region, 0), host_side(down.data()), kRows, kRow, kPitch, kPitch});
  dev.wait(dev.run(w));
  for (std::uint64_t r = 0; r < kRows; ++r) {
    ASSERT_EQ(0, std::memcmp(up.data() + r * kPitch, down.data() + r * kPitch, kRow)) << "row " << r;
    for (std::uint64_t i = kRow; i < kPitch; ++i) {
      ASSERT_EQ(down[r * kPitch + i], std::byte{0x5a}) << "gap of row " << r << " was written";
    }
  }
  EXPECT_GT(link_->counters().bytes_staged, 0u);
}

// The smallest shapes at the object's edge, both ways: 1 and 2 rows, each side's pitch equal to
// the row or larger, the rows on the agent's side ending at the object's last byte. Each row
// lands at its pitch, and no byte of a gap or past the last row is written.
TEST_P(CopyTest, OneAndTwoRowsEndingAtTheObjectsLastByteLandAtTheirPitchBothWays) {
  constexpr std::uint64_t kRow = 24, kObject = 4096, kGap = 40;
  Driven dev(*link_, 1);
  const auto region = dev->alloc(edge::Memory::kDevice, kObject);
  ASSERT_TRUE(region.has_value());
  for (std::uint64_t rows : {1ull, 2ull}) {
    for (std::uint64_t agent_pitch : {kRow, kRow + kGap}) {
      for (std::uint64_t pitch : {kRow, kRow + kGap}) {  // this process's side
        const std::uint64_t at = kObject - ((rows - 1) * agent_pitch + kRow);
        const std::uint64_t span = (rows - 1) * pitch + kRow;
        const std::vector<std::byte> up = random_bytes(span, rows * 1000 + agent_pitch * 10 + pitch);
        std::vector<std::byte> down(span + kGap, std::byte{0x5a});
        Work w;
        w.copy(rig_copy{host_side(up.data()), region_side(*region, at), rows, kRow, pitch, agent_pitch});
        w.copy(rig_copy{region_side(*region, at), host_side(down.data()), rows, kRow, agent_pitch, pitch});
        dev.wait(dev.run(w));
        const std::string shape = std::to_string(rows) + " rows, pitches " + std::to_string(agent_pitch) +
                                  " there and " + std::to_string(pitch) + " here";
        for (std::uint64_t i = 0; i < down.size(); ++i) {
          const bool in_a_row = i < span && i % pitch < kRow;
          ASSERT_EQ(down[i], in_a_row ? up[i] : std::byte{0x5a}) << shape << ", byte " << i;
        }
      }
    }
  }
  EXPECT_FALSE(job_->failed()) << job_->fault_text();
}

TEST_P(CopyTest, DeviceToDeviceOnTheAgent) {
  constexpr std::size_t kBytes = 1u << 20;
  std::vector<std::byte> down(kBytes);
  Driven a(*link_, 1);
  const auto src = a->alloc(edge::Memory::kDevice, kBytes);
  const auto dst = a->alloc(edge::Memory::kDevice, kBytes);
  ASSERT_TRUE(src && dst);
  const auto up = random_bytes(kBytes, 3);
  Work w;
  w.to_device(up.data(), *src, 0, kBytes).between(*src, 0, *dst, 0, kBytes).to_host(*dst, 0, down.data(), kBytes);
  a.wait(a.run(w));
  EXPECT_EQ(0, std::memcmp(up.data(), down.data(), kBytes));
}

TEST_P(CopyTest, AnEarlierPartStillReadsTheDestinationsOldBytes) {
  // Part 0 reads X; part 1 overwrites X from this process's memory. The agent must not land
  // part 1's bytes in X before part 0 ran.
  constexpr std::size_t kBytes = 1u << 20;
  Driven dev(*link_, 1);
  auto x = dev->alloc(edge::Memory::kDevice, kBytes);
  auto y = dev->alloc(edge::Memory::kDevice, kBytes);
  ASSERT_TRUE(x && y);
  const auto old_bytes = random_bytes(kBytes, 21), new_bytes = random_bytes(kBytes, 22);
  Work fill;
  fill.to_device(old_bytes.data(), *x, 0, kBytes);
  dev.wait(dev.run(fill));
  Work w;
  w.between(*x, 0, *y, 0, kBytes).to_device(new_bytes.data(), *x, 0, kBytes);
  dev.wait(dev.run(w));
  const auto [got_x, got_y] = read_back(dev, *x, *y, kBytes);
  EXPECT_EQ(got_y, old_bytes);
  EXPECT_EQ(got_x, new_bytes);
}

TEST_P(CopyTest, PendingEarlierWorkStillReadsTheDestinationsOldBytes) {
  RIG_NEED_DEVICES(*link_, 2);
  // A held handover of the device reads X; the device's next one overwrites X from this
  // process's memory, arriving while the first is still pending on the agent.
  constexpr std::size_t kBytes = 1u << 20;
  Driven dev(*link_, 1), gate(*link_, 2);
  auto x = dev->alloc(edge::Memory::kDevice, kBytes);
  auto y = dev->alloc(edge::Memory::kDevice, kBytes);
  auto g = gate->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(x && y && g);
  const auto old_bytes = random_bytes(kBytes, 31), new_bytes = random_bytes(kBytes, 32);
  Work fill;
  fill.to_device(old_bytes.data(), *x, 0, kBytes);
  dev.wait(dev.run(fill));
  const std::uint64_t staged0 = link_->counters().bytes_staged;
  Work held;
  held.wait(gate.word(), 2, 1).between(*x, 0, *y, 0, kBytes);
  dev.run(held);
  Work over;
  over.to_device(new_bytes.data(), *x, 0, kBytes);
  const std::uint64_t v = dev.run(over);
  Work open;
  open.between(*g, 0, *g, 0, 64);
  gate.wait(gate.run(open));
  dev.wait(v);
  const auto [got_x, got_y] = read_back(dev, *x, *y, kBytes);
  EXPECT_EQ(got_y, old_bytes);
  EXPECT_EQ(got_x, new_bytes);
  EXPECT_EQ(link_->counters().bytes_staged, staged0);  // the client staged nothing
}

INSTANTIATE_TEST_SUITE_P(Backends, CopyTest,
                         ::testing::Values(remote::Backend::kUring, remote::Backend::kPlain),
                         [](const auto& info) {
                           return std::string(info.param == remote::Backend::kUring ? "Uring" : "Plain");
                         });

}  // namespace
}  // namespace rig::test
