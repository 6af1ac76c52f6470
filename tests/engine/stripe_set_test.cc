// StripeSet on real loopback TCP: pieces land in place both ways and on both paths; a lying
// stripe or a silent one fails the transfer with its reason instead of hanging.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "rig/engine/counters.h"
#include "rig/engine/stripe_set.h"
#include "rig/engine/syscall_count.h"
#include "socket_pair.h"

namespace rig::engine {
namespace {

// Two stripe sets joined by `n` loopback pairs: `out` sends, `in` receives.
struct Sets {
  Counters out_counters, in_counters;
  StripeSet out, in;
  Sets(bool parallel, std::size_t n, std::size_t zc_bytes = 0)
      : out(parallel, out_counters, zc_bytes), in(parallel, in_counters) {
    for (std::size_t i = 0; i < n; ++i) {
      Pair p = connected(parallel ? Backend::kUring : Backend::kPlain);
      out.add(std::move(p.a));
      in.add(std::move(p.b));
    }
  }
};

class StripeSetTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam() && !uring_available()) GTEST_FAIL() << "no io_uring here";
  }
};

TEST_P(StripeSetTest, StridedPiecesLandInTheirRowsExact) {
  Sets s(GetParam(), 3);
  constexpr std::uint64_t kRows = 300, kRow = 1000, kPitch = 1500;
  std::vector<std::byte> src(kRows * kPitch), dst(kRows * kPitch, std::byte{0x5a});
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 7 + 1);
  const wire::Striped st{1, 2, 3, 0, kRows * kRow, (kRows * kRow + 2) / 3};
  wire::Outcome got = wire::Outcome::failed(-EINPROGRESS, "the reader did not run");
  std::thread reader([&] { got = s.in.recv_striped(st, dst.data(), kRow, kPitch); });
  ASSERT_EQ(s.out.send_striped(st, src.data(), kRow, kPitch), 0);
  reader.join();
  ASSERT_TRUE(got.ok()) << got.why();
  for (std::uint64_t r = 0; r < kRows; ++r) {
    ASSERT_EQ(0, std::memcmp(src.data() + r * kPitch, dst.data() + r * kPitch, kRow)) << "row " << r;
    ASSERT_EQ(dst[r * kPitch + kRow], std::byte{0x5a}) << "gap of row " << r;
  }
  EXPECT_EQ(s.out_counters.bytes_striped_out.load(), kRows * kRow);
  EXPECT_EQ(s.in_counters.bytes_striped_in.load(), kRows * kRow);
}

// A bound on the bytes per SQE (set_window_bytes, RIG_STRIPE_WINDOW_BYTES) cuts each stripe's
// windows, contiguous and strided alike, and every byte still lands in place. On the parallel
// path each window is an SQE of its own: the sender reaps at least one completion per window.
TEST_P(StripeSetTest, AWindowBoundInBytesCutsEachStripesTransferAndEveryByteStillLands) {
  constexpr std::size_t kWindowBytes = 4099;  // not a multiple of a row: windows end mid-row
  for (const std::uint64_t pitch : {std::uint64_t{1000}, std::uint64_t{1500}}) {
    Sets s(GetParam(), 3);
    s.out.set_window_bytes(kWindowBytes);
    s.in.set_window_bytes(kWindowBytes);
    constexpr std::uint64_t kRows = 300, kRow = 1000;
    std::vector<std::byte> src(kRows * pitch), dst(kRows * pitch, std::byte{0x5a});
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 7 + 1);
    const wire::Striped st{1, 2, 3, 0, kRows * kRow, (kRows * kRow + 2) / 3};
    wire::Outcome got = wire::Outcome::failed(-EINPROGRESS, "the reader did not run");
    std::thread reader([&] { got = s.in.recv_striped(st, dst.data(), kRow, pitch); });
    const ThreadSyscalls& mine = this_thread_syscalls();
    // relaxed: this thread's own statistics.
    const std::uint64_t completions = mine.completions.load(std::memory_order_relaxed);
    ASSERT_EQ(s.out.send_striped(st, src.data(), kRow, pitch), 0);
    reader.join();
    ASSERT_TRUE(got.ok()) << got.why();
    for (std::uint64_t r = 0; r < kRows; ++r) {
      ASSERT_EQ(0, std::memcmp(src.data() + r * pitch, dst.data() + r * pitch, kRow)) << "row " << r << " pitch " << pitch;
    }
    if (GetParam()) {
      EXPECT_GE(mine.completions.load(std::memory_order_relaxed) - completions, kRows * kRow / kWindowBytes)
          << "pitch " << pitch << ": the windows were not cut at " << kWindowBytes << " bytes";
    }
  }
}

// ctest's engine_tests_stripe_window runs the stripe tests with RIG_STRIPE_WINDOW_BYTES=65536.
TEST(StripeWindow, TheDefaultBoundComesFromRigStripeWindowBytes) {
  const char* env = std::getenv("RIG_STRIPE_WINDOW_BYTES");
  EXPECT_EQ(default_stripe_window_bytes(), env != nullptr ? std::strtoull(env, nullptr, 10) : 0u);
}

TEST_P(StripeSetTest, APieceOtherThanAnnouncedIsAProtocolErrorNamingTheStripe) {
  Sets s(GetParam(), 2);
  std::vector<std::byte> src(8192, std::byte{1}), dst(8192);
  const wire::Striped sent{1, 0, 5, 0, 8192, 4096};
  wire::Striped expected = sent;
  expected.value = 6;  // the reader expects another value
  wire::Outcome got;
  std::thread reader([&] { got = s.in.recv_striped(expected, dst.data(), 8192, 8192); });
  ASSERT_EQ(s.out.send_striped(sent, src.data(), 8192, 8192), 0);
  reader.join();
  EXPECT_EQ(got.err(), -EPROTO);
  EXPECT_NE(got.why().find("stripe 0 carried bytes (device 1, value 5"), std::string::npos) << got.why();
}

TEST_P(StripeSetTest, MorePiecesThanStripesAreRefusedBeforeAnyRead) {
  Sets s(GetParam(), 2);
  std::vector<std::byte> dst(3 * 4096);
  const wire::Outcome got =
      s.in.recv_striped(wire::Striped{1, 0, 1, 0, 3 * 4096, 4096}, dst.data(), 3 * 4096, 3 * 4096);
  EXPECT_EQ(got.err(), -EPROTO);
  EXPECT_NE(got.why().find("3 pieces over 2 stripes"), std::string::npos) << got.why();
}

TEST(StripeSetSilence, AReceiveNoStripeFeedsFailsAfterTheSilenceBound) {
  if (!uring_available()) GTEST_FAIL() << "no io_uring here";
  Sets s(true, 2);
  s.in.set_silence_ms(200);
  std::vector<std::byte> dst(8192);
  // The peer announces nothing and sends nothing: the receive must end, not hang.
  EXPECT_EQ(s.in.recv_striped(wire::Striped{1, 0, 1, 0, 8192, 4096}, dst.data(), 8192, 8192).err(), -ETIMEDOUT);
}

// A parallel send whose legs go zero-copy returns only once the kernel no longer reads any of
// them: every send's notification was taken by then (on loopback each says the kernel copied
// the bytes, so the two counts are equal when the send returns), and the ring is left with
// nothing in flight for the next transfer.
TEST(StripeSetZeroCopy, ASendReturnsOnlyAfterEveryLegsNotification) {
  if (!uring_available()) GTEST_FAIL() << "no io_uring here";
  constexpr std::size_t kLeg = 1 << 20, kLegs = 3;
  Sets s(true, kLegs, 64 * 1024);
  std::vector<std::byte> src(kLegs * kLeg), dst(kLegs * kLeg);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 13 + 5);
  std::vector<iovec> out(kLegs), in(kLegs);
  std::vector<std::span<const iovec>> out_legs, in_legs;
  for (std::size_t i = 0; i < kLegs; ++i) {
    out[i] = iovec{src.data() + i * kLeg, kLeg};
    in[i] = iovec{dst.data() + i * kLeg, kLeg};
    out_legs.emplace_back(&out[i], 1);
    in_legs.emplace_back(&in[i], 1);
  }
  for (int round = 0; round < 2; ++round) {
    int got = -1;
    std::thread reader([&] { got = s.in.recv(in_legs); });
    const int sent = s.out.send(out_legs);
    const std::uint64_t sends = s.out_counters.zc_sends.load(), copied = s.out_counters.zc_copied.load();
    reader.join();  // before any assertion can leave the test
    ASSERT_EQ(sent, 0);
    ASSERT_EQ(got, 0);
    EXPECT_GE(sends, kLegs * (round + 1)) << "round " << round;
    EXPECT_EQ(copied, sends) << "a notification came after the send returned; round " << round;
    EXPECT_EQ(std::memcmp(src.data(), dst.data(), src.size()), 0) << "round " << round;
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, StripeSetTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "parallel" : "one_by_one"; });

}  // namespace
}  // namespace rig::engine
