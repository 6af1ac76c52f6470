// Both socket backends on real loopback TCP: whole transfers, short writes and reads injected,
// a lost connection, and a shutdown that wakes a blocked receive.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <numeric>
#include <random>
#include <thread>

#include "rig/engine/counters.h"
#include "rig/engine/faulty_socket.h"
#include "rig/engine/frame_reader.h"
#include "rig/engine/iov_cursor.h"
#include "rig/engine/socket.h"
#include "rig/engine/tcp.h"
#include "rig/engine/uring_socket.h"
#include "rig/wire/codec.h"
#include "socket_pair.h"

namespace rig::engine {
namespace {

std::vector<char> pattern(std::size_t n, unsigned seed) {
  std::vector<char> v(n);
  std::mt19937 rng(seed);
  for (auto& c : v) c = static_cast<char>(rng());
  return v;
}

class SocketTest : public BackendTest {};

TEST_P(SocketTest, RecvReadyTakesWhatIsThereAndNeverWaits) {
  Pair p = connected(GetParam());
  char buf[64];
  EXPECT_EQ(p.b->recv_ready(buf, sizeof buf), -EAGAIN);  // nothing sent yet: no wait
  const char msg[] = "ready";
  const iovec iov{const_cast<char*>(msg), sizeof msg};
  ASSERT_EQ(p.a->send_all({&iov, 1}), 0);
  ASSERT_EQ(p.b->wait_readable(5000), 0);
  EXPECT_EQ(p.b->recv_ready(buf, sizeof buf), static_cast<long>(sizeof msg));
  EXPECT_STREQ(buf, "ready");
  EXPECT_EQ(p.b->recv_ready(buf, sizeof buf), -EAGAIN);
  p.a->shutdown();
  ASSERT_EQ(p.b->wait_readable(5000), 0);
  EXPECT_EQ(p.b->recv_ready(buf, sizeof buf), 0);  // end of stream
}

TEST_P(SocketTest, AReceiveThatSeesNoByteForTheSilenceBoundReturnsTimedOut) {
  Pair p = connected(GetParam());
  p.b->set_recv_silence_ms(100);
  // The peer sends half of what the receiver waits for, then nothing.
  const auto half = pattern(1000, 1);
  const iovec out{const_cast<char*>(half.data()), half.size()};
  ASSERT_EQ(p.a->send_all({&out, 1}), 0);
  std::vector<char> in(2000);
  const iovec iov{in.data(), in.size()};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(p.b->recv_all({&iov, 1}), -ETIMEDOUT);
  char c;
  EXPECT_EQ(p.b->recv_some(&c, 1), -ETIMEDOUT);
  // Bounded: far below the 10 s a hung receive would be cut at by this test's own limit.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// The peer sends a quarter of what the receiver waits for, then a second quarter `later`, then
// nothing: how long the receive took to fail, from that last byte.
std::chrono::steady_clock::duration silent_after_last_byte(Pair& p, int bound_ms, std::chrono::milliseconds later) {
  p.b->set_recv_silence_ms(bound_ms);
  const auto data = pattern(2000, 3);
  std::vector<char> in(4000);
  std::chrono::steady_clock::time_point last;
  std::thread peer([&] {
    for (int k = 0; k < 2; ++k) {
      if (k == 1) std::this_thread::sleep_for(later);
      const iovec out{const_cast<char*>(data.data() + k * 1000), 1000};
      EXPECT_EQ(p.a->send_all({&out, 1}), 0);
      last = std::chrono::steady_clock::now();
    }
  });
  const iovec iov{in.data(), in.size()};
  const int rc = p.b->recv_all({&iov, 1});
  const auto failed = std::chrono::steady_clock::now();
  peer.join();
  EXPECT_EQ(rc, -ETIMEDOUT);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), in.begin())) << "the half that came did not land";
  return failed - last;
}

TEST_P(SocketTest, AReceiveCutShortCountsItsSilenceFromTheLastByteThatCameNotFromItsStart) {
  // A transfer whose every receive waits the whole bound from its own start (the one the bound
  // cut short, then the next) fails two bounds after the start at the earliest: 2 bounds after
  // bytes that came at once, 1.5 after bytes that came half a bound in. TCP_INFO counts in the
  // kernel's ticks (a few milliseconds).
  constexpr int kBoundMs = 2000;
  for (const int later_ms : {0, kBoundMs / 2}) {
    Pair p = connected(GetParam());
    const auto silent = silent_after_last_byte(p, kBoundMs, std::chrono::milliseconds(later_ms));
    EXPECT_GE(silent, std::chrono::milliseconds(kBoundMs - 20)) << "cut before the bound; later " << later_ms;
    EXPECT_LT(silent, std::chrono::milliseconds(2 * kBoundMs - later_ms)) << "the bound restarted; later " << later_ms;
  }
}

TEST_P(SocketTest, EachReceiveHasTheWholeSilenceBoundFromItsOwnStart) {
  // On io_uring one watchdog timeout per ring bounds the receives: armed by the first, it fires
  // 300 ms after it, while the second has waited only about 100 ms.
  Pair p = connected(GetParam());
  p.b->set_recv_silence_ms(300);
  char c = 'x';
  const iovec one{&c, 1};
  ASSERT_EQ(p.a->send_all({&one, 1}), 0);
  char got = 0;
  ASSERT_EQ(p.b->recv_some(&got, 1), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // A receive that is never cut gets this byte (after 3 s) instead of -ETIMEDOUT.
  std::promise<void> returned;
  std::thread late([&, f = returned.get_future()] {
    f.wait_for(std::chrono::seconds(3));
    p.a->send_all({&one, 1});
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(p.b->recv_some(&got, 1), -ETIMEDOUT);
  const auto waited = std::chrono::steady_clock::now() - start;
  returned.set_value();
  EXPECT_GE(waited, std::chrono::milliseconds(290)) << "cut before its own bound";
  EXPECT_LT(waited, std::chrono::milliseconds(2900));
  late.join();
}

TEST_P(SocketTest, ASlowPeerThatKeepsSendingIsNotSilent) {
  Pair p = connected(GetParam());
  p.b->set_recv_silence_ms(300);
  const auto data = pattern(10, 2);
  // 10 bytes, one every 100 ms: a second in all, never silent for 300 ms.
  std::thread slow([&] {
    for (char c : data) {
      const iovec one{const_cast<char*>(&c), 1};
      p.a->send_all({&one, 1});
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::vector<char> in(data.size());
  const iovec iov{in.data(), in.size()};
  EXPECT_EQ(p.b->recv_all({&iov, 1}), 0);
  slow.join();
  EXPECT_EQ(in, data);
}

TEST_P(SocketTest, ScatterSendGatherReceiveIsExact) {
  Pair p = connected(GetParam());
  const auto data = pattern(3 << 20, 1);
  std::vector<iovec> out;
  for (std::size_t at = 0; at < data.size(); at += 1000) {
    out.push_back(to_iov(data.data() + at, std::min<std::size_t>(1000, data.size() - at)));
  }
  std::vector<char> got(data.size());
  std::vector<iovec> in;
  for (std::size_t at = 0; at < got.size(); at += 777) {
    in.push_back({got.data() + at, std::min<std::size_t>(777, got.size() - at)});
  }
  std::thread sender([&] { EXPECT_EQ(p.a->send_all(out), 0); });
  EXPECT_EQ(p.b->recv_all(in), 0);
  sender.join();
  EXPECT_EQ(data, got);
  EXPECT_STREQ(p.a->backend(), GetParam() == Backend::kUring ? "io_uring" : "plain");
}

TEST_P(SocketTest, ShortWritesAndReadsStillDeliverEveryByteInOrder) {
  Pair p = connected(GetParam());
  Faults f;
  f.max_send_chunk = 333;
  f.max_recv_chunk = 101;
  FaultySocket a(std::move(p.a), f), b(std::move(p.b), f);
  const auto data = pattern(200000, 2);
  std::vector<char> got(data.size());
  std::thread sender([&] {
    const iovec iov = to_iov(data.data(), data.size());
    EXPECT_EQ(a.send_all({&iov, 1}), 0);
  });
  const iovec iov{got.data(), got.size()};
  EXPECT_EQ(b.recv_all({&iov, 1}), 0);
  sender.join();
  EXPECT_EQ(data, got);
}

TEST_P(SocketTest, ALostConnectionFailsTheSendAndEndsTheStream) {
  Pair p = connected(GetParam());
  Faults f;
  f.lose_after_bytes = 1000;
  FaultySocket a(std::move(p.a), f);
  const auto data = pattern(5000, 3);
  const iovec iov = to_iov(data.data(), data.size());
  EXPECT_EQ(a.send_all({&iov, 1}), -ECONNRESET);
  char buf[64];
  long got = 0, n = 0;
  while ((n = p.b->recv_some(buf, sizeof buf)) > 0) got += n;
  EXPECT_LE(got, 1000);
}

TEST_P(SocketTest, ShutdownWakesABlockedReceive) {
  Pair p = connected(GetParam());
  std::atomic<long> result{1};
  std::thread reader([&] {
    char buf[16];
    result.store(p.b->recv_some(buf, sizeof buf), std::memory_order_release);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  p.b->shutdown();
  reader.join();
  EXPECT_LE(result.load(std::memory_order_acquire), 0);
}

TEST_P(SocketTest, FrameReaderCountsBufferedPayloadAsCopiedAndTheRestAsDirect) {
  Pair p = connected(GetParam());
  Counters counters;
  const auto payload = pattern(1 << 20, 4);
  const auto hdr = wire::frame(wire::MsgType::kBytes, wire::Bytes{1, 0, 1, 0, 1u << 20, 0}, payload.size());
  std::thread sender([&] {
    const iovec iov[2] = {to_iov(&hdr, sizeof hdr), to_iov(payload.data(), payload.size())};
    EXPECT_EQ(p.a->send_all(iov), 0);
  });
  FrameReader reader(*p.b, counters);
  wire::FrameHeader h{};
  ASSERT_EQ(reader.next(h).err(), 0);
  std::span<const std::byte> fixed;
  ASSERT_EQ(reader.body(sizeof(wire::Bytes), fixed), 0);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(fixed.data()) % 8, 0u);
  std::vector<char> got(payload.size());
  const iovec iov{got.data(), got.size()};
  ASSERT_EQ(reader.payload({&iov, 1}), 0);
  sender.join();
  EXPECT_EQ(got, payload);
  EXPECT_EQ(counters.payload_bytes_copied.load() + counters.payload_bytes_direct.load(), payload.size());
  EXPECT_EQ(counters.bytes_received.load(), sizeof hdr + payload.size());
}

TEST_P(SocketTest, FrameReaderRejectsABadHeaderWithAReason) {
  Pair p = connected(GetParam());
  Counters counters;
  const wire::FrameHeader bad{16, 4242, 0};
  const iovec iov = to_iov(&bad, sizeof bad);
  ASSERT_EQ(p.a->send_all({&iov, 1}), 0);
  FrameReader reader(*p.b, counters);
  wire::FrameHeader h{};
  const wire::Outcome refused = reader.next(h);
  EXPECT_EQ(refused.err(), -EPROTO);
  EXPECT_NE(refused.why().find("unknown type"), std::string::npos) << refused.why();
}


// ---- Zero-copy sends (io_uring SEND_ZC) ----

constexpr std::size_t kZc = 64 * 1024;

class ZeroCopySend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!uring_available()) GTEST_FAIL() << "no io_uring here";
  }
  // Receives `n` bytes on `b` while `send` runs on this thread; returns them.
  static std::vector<char> carry(Socket& b, std::size_t n, const std::function<void()>& send) {
    std::vector<char> got(n);
    std::thread reader([&] {
      const iovec iov{got.data(), got.size()};
      EXPECT_EQ(b.recv_all({&iov, 1}), 0);
    });
    send();
    reader.join();
    return got;
  }
  Counters counters_;
};

TEST_F(ZeroCopySend, OnLoopbackTheAutomaticThresholdIsOffAndAnExplicitOneIsKept) {
  if (std::getenv("RIG_SEND_ZC_BYTES") != nullptr) GTEST_SKIP() << "RIG_SEND_ZC_BYTES is set";
  Pair p = connected(Backend::kUring);
  EXPECT_EQ(resolve_send_zc_bytes(p.a->fd(), kSendZcAuto), 0u);
  EXPECT_EQ(resolve_send_zc_bytes(p.a->fd(), kZc), kZc);
  EXPECT_EQ(dynamic_cast<UringSocket&>(*p.a).send_zc_bytes(), 0u);
}

TEST_F(ZeroCopySend, ASendAboveTheThresholdGoesZeroCopyAndEveryByteArrives) {
  Pair p = connected(Backend::kUring, {kZc, &counters_});
  const auto data = pattern(6 << 20, 7);
  std::vector<iovec> out;  // many pieces: one SENDMSG_ZC per window of 64
  for (std::size_t at = 0; at < data.size(); at += 40000) {
    out.push_back(to_iov(data.data() + at, std::min<std::size_t>(40000, data.size() - at)));
  }
  const auto got = carry(*p.b, data.size(), [&] { EXPECT_EQ(p.a->send_all(out), 0); });
  EXPECT_EQ(got, data);
  EXPECT_GE(counters_.zc_sends.load(), 1u);
  EXPECT_LE(counters_.zc_copied.load(), counters_.zc_sends.load());
  EXPECT_EQ(counters_.zc_fallbacks.load(), 0u);
  // Below the threshold: by copy.
  const std::uint64_t zc = counters_.zc_sends.load();
  const auto small = pattern(kZc - 1, 8);
  const auto got_small = carry(*p.b, small.size(), [&] {
    const iovec iov = to_iov(small.data(), small.size());
    EXPECT_EQ(p.a->send_all({&iov, 1}), 0);
  });
  EXPECT_EQ(got_small, small);
  EXPECT_EQ(counters_.zc_sends.load(), zc);
}

TEST_F(ZeroCopySend, ShortWritesEachGoZeroCopyAndStillDeliverEveryByteInOrder) {
  Pair p = connected(Backend::kUring, {kZc, &counters_});
  Faults f;
  f.max_send_chunk = 100000;  // each chunk a zero-copy send of its own
  FaultySocket a(std::move(p.a), f);
  const auto data = pattern(1 << 20, 9);
  const auto got = carry(*p.b, data.size(), [&] {
    const iovec iov = to_iov(data.data(), data.size());
    EXPECT_EQ(a.send_all({&iov, 1}), 0);
  });
  EXPECT_EQ(got, data);
  EXPECT_EQ(counters_.zc_sends.load(), (1u << 20) / 100000);  // every full chunk; the tail is small
}

TEST_F(ZeroCopySend, ASocketWithoutZeroCopyFallsBackToCopyingForGood) {
  // Unix stream sockets do not support SEND_ZC: the kernel answers -EOPNOTSUPP.
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  auto a = make_socket(sv[0], Backend::kUring, {kZc, &counters_});
  auto b = make_socket(sv[1], Backend::kUring);
  for (unsigned round = 0; round < 2; ++round) {
    const auto data = pattern(1 << 20, 10 + round);
    const auto got = carry(*b, data.size(), [&] {
      const iovec iov = to_iov(data.data(), data.size());
      EXPECT_EQ(a->send_all({&iov, 1}), 0);
    });
    EXPECT_EQ(got, data);
  }
  EXPECT_EQ(counters_.zc_sends.load(), 0u);
  EXPECT_EQ(counters_.zc_fallbacks.load(), 1u);  // refused once, then never tried again
  EXPECT_EQ(dynamic_cast<UringSocket&>(*a).send_zc_bytes(), 0u);
}

TEST_F(ZeroCopySend, ARegisteredBufferGoesZeroCopyAboveTheThresholdAndByCopyBelowIt) {
  Pair p = connected(Backend::kUring, {kZc, &counters_});
  std::vector<char> buf = pattern(1 << 20, 12);
  const iovec reg{buf.data(), buf.size()};
  ASSERT_EQ(p.a->register_send_buffers({&reg, 1}), 0);
  EXPECT_EQ(p.a->register_send_buffers({&reg, 1}), -EBUSY);
  const char head[] = "head:";
  const iovec h = to_iov(head, 5);
  for (const std::size_t n : {std::size_t{512 << 10}, kZc / 2}) {
    const std::uint64_t zc = counters_.zc_sends.load();
    const auto got = carry(*p.b, 5 + n, [&] { EXPECT_EQ(p.a->send_fixed({&h, 1}, buf.data() + 4096, n, 0), 0); });
    EXPECT_EQ(0, std::memcmp(got.data(), head, 5));
    EXPECT_EQ(0, std::memcmp(got.data() + 5, buf.data() + 4096, n)) << n;
    EXPECT_EQ(counters_.zc_sends.load() - zc, n >= kZc ? 1u : 0u) << n;
  }
}

TEST_F(ZeroCopySend, ThePlainBackendHasNoRegisteredBuffersAndSendsFixedPiecesByCopy) {
  Pair p = connected(Backend::kPlain, {kZc, &counters_});
  std::vector<char> buf = pattern(256 << 10, 13);
  const iovec reg{buf.data(), buf.size()};
  EXPECT_EQ(p.a->register_send_buffers({&reg, 1}), -EOPNOTSUPP);
  const iovec h = to_iov("x", 1);
  const auto got = carry(*p.b, 1 + buf.size(), [&] { EXPECT_EQ(p.a->send_fixed({&h, 1}, buf.data(), buf.size(), 0), 0); });
  EXPECT_EQ(0, std::memcmp(got.data() + 1, buf.data(), buf.size()));
  EXPECT_EQ(counters_.zc_sends.load(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, SocketTest, kBackends, backend_test_name);

}  // namespace
}  // namespace rig::engine
