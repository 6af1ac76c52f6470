// Striping (wire kStripeGrant/kJoin/kStriped): copies of a link with data connections besides
// its own cross in pieces over them, both ways, against a real rig-agent on loopback.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "agent_process.h"
#include "test_connect.h"
#include "rig/engine/socket.h"
#include "raw_peer.h"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"
#include "rig/remote/proxy.h"
#include "random_bytes.h"
#include "run_and_wait.h"

namespace rig::test {
using namespace rig::harness;
namespace {

using remote::Job;

class StripeTest : public ::testing::TestWithParam<remote::Backend> {
 protected:
  static void SetUpTestSuite() {
    agent_ = new AgentProcess({"--max-stripes", "4", "--device-budget",
                               std::to_string(256u << 20)});
  }
  static void TearDownTestSuite() {
    delete agent_;
    agent_ = nullptr;
  }
  void SetUp() override {
    if (GetParam() == remote::Backend::kUring && !engine::uring_available()) {
      GTEST_FAIL() << "io_uring is not available on this machine";
    }
  }
  remote::LinkOptions options(int stripes) const {
    remote::LinkOptions o;
    o.backend = GetParam();
    o.stripes = stripes;
    o.stripe_min_bytes = 64 * 1024;
    return o;
  }
  // Up to a device and back through `dev`, rows of row_bytes at `pitch` in this process's
  // memory (pitch == row_bytes: contiguous); checks every byte and every gap.
  static void round_trip(Driven& dev, std::uint64_t rows, std::uint64_t row_bytes, std::uint64_t pitch,
                         std::uint32_t seed) {
    const std::uint64_t packed = rows * row_bytes;
    const auto region = dev->alloc(edge::Memory::kDevice, (packed + 3) & ~std::uint64_t{3});
    ASSERT_TRUE(region.has_value());
    const auto up = random_bytes(rows * pitch, seed);
    std::vector<std::byte> down(rows * pitch, std::byte{0x5a});
    Work w1;
    w1.copy(rig_copy{host_side(up.data()), region_side(*region, 0), rows, row_bytes, pitch, row_bytes});
    dev.wait(dev.run(w1));
    Work w2;
    w2.copy(rig_copy{region_side(*region, 0), host_side(down.data()), rows, row_bytes, row_bytes, pitch});
    run_and_wait(dev, w2);
    for (std::uint64_t r = 0; r < rows; ++r) {
      ASSERT_EQ(0, std::memcmp(up.data() + r * pitch, down.data() + r * pitch, row_bytes)) << "row " << r;
      for (std::uint64_t i = row_bytes; i < pitch; ++i) {
        ASSERT_EQ(down[r * pitch + i], std::byte{0x5a}) << "gap of row " << r << " was written";
      }
    }
    dev->free(*region);
  }

  static AgentProcess* agent_;
};
AgentProcess* StripeTest::agent_ = nullptr;

TEST_P(StripeTest, ContiguousCopiesCrossTheStripesBothWaysExact) {
  auto job = Job::create();
  remote::Link& link = job->connect(agent_->endpoint(), options(3));
  ASSERT_EQ(link.stripes(), 3u);
  Driven dev(link, 1);
  const std::uint64_t direct0 = link.counters().payload_bytes_direct;
  const std::uint64_t copied0 = link.counters().payload_bytes_copied;
  // Odd sizes: pieces of unequal length, a last group shorter than the others.
  for (std::uint64_t bytes : {std::uint64_t{65536}, std::uint64_t{(9u << 20) + 12345}}) {
    round_trip(dev, 1, bytes, bytes, static_cast<std::uint32_t>(bytes));
  }
  // Every byte into this process came over the stripes, straight into place.
  EXPECT_EQ(link.counters().payload_bytes_direct - direct0, 65536u + (9u << 20) + 12345);
  EXPECT_EQ(link.counters().payload_bytes_copied, copied0);
  EXPECT_EQ(link.counters().bytes_striped_in, 65536u + (9u << 20) + 12345);
  EXPECT_EQ(link.counters().bytes_striped_out, 65536u + (9u << 20) + 12345);
  EXPECT_FALSE(job->failed()) << job->fault_text();
}

TEST_P(StripeTest, StridedRowsCrossTheStripesInPlaceWithNothingStaged) {
  auto job = Job::create();
  remote::Link& link = job->connect(agent_->endpoint(), options(4));
  ASSERT_EQ(link.stripes(), 4u);
  Driven dev(link, 1);
  round_trip(dev, 700, 4096 + 12, 8192, 3);
  EXPECT_EQ(link.counters().bytes_staged, 0u);
  EXPECT_FALSE(job->failed()) << job->fault_text();
}

TEST_P(StripeTest, CopiesBelowTheThresholdTakeTheJobsConnection) {
  auto job = Job::create();
  remote::LinkOptions o = options(2);
  o.stripe_min_bytes = 1u << 30;
  remote::Link& link = job->connect(agent_->endpoint(), o);
  ASSERT_EQ(link.stripes(), 2u);
  Driven dev(link, 1);
  round_trip(dev, 1, 1u << 20, 1u << 20, 9);
  // Neither way: the agent follows the threshold the link sent in its joins.
  EXPECT_EQ(link.counters().bytes_striped_out, 0u);
  EXPECT_EQ(link.counters().bytes_striped_in, 0u);
}

TEST_P(StripeTest, TheAgentGrantsNoMoreStripesThanItsMaximum) {
  auto job = Job::create();
  remote::Link& link = job->connect(agent_->endpoint(), options(9));
  EXPECT_EQ(link.stripes(), 4u);
  Driven dev(link, 1);
  round_trip(dev, 1, 5u << 20, 5u << 20, 4);
}

TEST_P(StripeTest, ShortWritesAndReadsOnEveryConnectionStillLandExact) {
  auto job = Job::create();
  remote::LinkOptions o = options(3);
  remote::Link& link = remote::connect_with_faults(*job, agent_->endpoint(), o,
                                                   engine::Faults{.max_send_chunk = 100'000, .max_recv_chunk = 70'000});
  ASSERT_EQ(link.stripes(), 3u);
  Driven dev(link, 1);
  round_trip(dev, 1, (3u << 20) + 7, (3u << 20) + 7, 5);
  round_trip(dev, 300, 5000, 6000, 6);
  EXPECT_FALSE(job->failed()) << job->fault_text();
}

TEST_P(StripeTest, PiecesAboveTheZeroCopyThresholdGoZeroCopyAndLandExact) {
  auto job = Job::create();
  remote::LinkOptions o = options(2);
  o.send_zc_bytes = 64 * 1024;  // forced on loopback, where the kernel then copies anyway
  remote::Link& link = job->connect(agent_->endpoint(), o);
  ASSERT_EQ(link.stripes(), 2u);
  Driven dev(link, 1);
  round_trip(dev, 1, (6u << 20) + 3, (6u << 20) + 3, 12);
  round_trip(dev, 400, 8192, 12288, 13);
  if (GetParam() == remote::Backend::kUring) {
    // 6 MiB + 3 and 3.1 MiB: pieces of 2 MiB, each one zero-copy send (or more, if short).
    EXPECT_GE(link.counters().zc_sends, 5u);
    EXPECT_EQ(link.counters().zc_copied, link.counters().zc_sends) << "loopback copies";
  } else {
    EXPECT_EQ(link.counters().zc_sends, 0u);  // the plain backend never sends zero-copy
  }
  EXPECT_FALSE(job->failed()) << job->fault_text();
}

TEST_P(StripeTest, AStripeLostMidCopyFailsTheJobWithItsReason) {
  auto job = Job::create();
  remote::LinkOptions o = options(2);
  // Each stripe breaks after 1 MiB.
  remote::Link& link = remote::connect_with_faults(*job, agent_->endpoint(), o, engine::Faults{.lose_after_bytes = 1u << 20});
  ASSERT_EQ(link.stripes(), 2u);
  Driven dev(link, 1);
  const auto region = dev->alloc(edge::Memory::kDevice, 8u << 20);
  ASSERT_TRUE(region.has_value());
  const auto up = random_bytes(8u << 20, 1);
  Work w;
  w.to_device(up.data(), *region, 0, 8u << 20);
  const Driven::Submitted s = dev.submit(w);
  EXPECT_EQ(s.rc, RIG_FAILED);
  EXPECT_TRUE(job->failed());
  // Whichever end sees the break first names it: this side's failed send, or the agent's lost
  // stripe (reported back as the job's root cause).
  const std::string why = job->fault_text();
  EXPECT_TRUE(why.find("send failed") != std::string::npos ||
              why.find("the agent failed the job: a stripe was lost") != std::string::npos)
      << why;
}

INSTANTIATE_TEST_SUITE_P(Backends, StripeTest, ::testing::Values(remote::Backend::kUring, remote::Backend::kPlain),
                         [](const auto& info) { return std::string(info.param == remote::Backend::kPlain ? "plain" : "uring"); });

TEST(StripeGrant, AnAgentWithoutStripesGrantsNoneAndCopiesStillWork) {
  AgentProcess agent({"--max-stripes", "0"});
  auto job = Job::create();
  remote::LinkOptions o;
  o.stripes = 3;
  remote::Link& link = job->connect(agent.endpoint(), o);
  EXPECT_EQ(link.stripes(), 0u);
  std::vector<std::byte> down(2u << 20);
  Driven dev(link, 1);
  const auto region = dev->alloc(edge::Memory::kDevice, 2u << 20);
  ASSERT_TRUE(region.has_value());
  const auto up = random_bytes(2u << 20, 2);
  Work w;
  w.to_device(up.data(), *region, 0, 2u << 20);
  w.to_host(*region, 0, down.data(), 2u << 20);
  dev.wait(dev.run(w));
  EXPECT_EQ(0, std::memcmp(up.data(), down.data(), up.size()));
}

TEST(StripeGrant, ByDefaultALinkOnLoopbackAsksForNoStripes) {
  AgentProcess agent;
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  if (std::getenv("RIG_STRIPES") == nullptr) EXPECT_EQ(link.stripes(), 0u);
  else EXPECT_EQ(link.stripes(), std::min<std::size_t>(std::atoi(std::getenv("RIG_STRIPES")), 8));
}

}  // namespace
}  // namespace rig::test
