// Several threads send through one connection: every message arrives whole, never interleaved
// with another, each thread's messages in order. Checked by checksum.
#include <gtest/gtest.h>

#include <unistd.h>

#include <random>
#include <thread>
#include <vector>

#include "rig/engine/connection.h"
#include "rig/engine/iov_cursor.h"
#include "rig/engine/tcp.h"
#include "socket_pair.h"

namespace rig::engine {
namespace {

struct MsgHeader {
  std::uint32_t thread;
  std::uint32_t seq;
  std::uint32_t length;
  std::uint32_t checksum;
};

std::uint32_t checksum(const std::vector<std::uint8_t>& v) {
  std::uint32_t h = 2166136261u;
  for (auto b : v) h = (h ^ b) * 16777619u;
  return h;
}

void concurrent_senders_never_interleave(bool combined) {
  for (Backend backend : {Backend::kUring, Backend::kPlain}) {
    if (backend == Backend::kUring && !uring_available()) continue;
    Pair pair = connected(backend);
    Counters counters;
    Connection conn(std::move(pair.a), counters);
    auto rx = std::move(pair.b);

    constexpr std::uint32_t kThreads = 4, kMessages = 400;
    std::vector<std::thread> senders;
    for (std::uint32_t t = 0; t < kThreads; ++t) {
      senders.emplace_back([&, t] {
        std::mt19937 rng(t);
        for (std::uint32_t s = 0; s < kMessages; ++s) {
          std::vector<std::uint8_t> body(rng() % 20000 + 1);
          for (auto& b : body) b = static_cast<std::uint8_t>(rng());
          const MsgHeader h{t, s, static_cast<std::uint32_t>(body.size()), checksum(body)};
          // Two iovecs per message, as a header and its payload go out.
          const iovec iov[2] = {to_iov(&h, sizeof h), to_iov(body.data(), body.size())};
          if (combined) {
            ASSERT_EQ(conn.send_combined(iov), 0);
          } else {
            ASSERT_EQ(conn.send(iov), 0);
          }
        }
      });
    }
    std::vector<std::uint32_t> next(kThreads, 0);
    for (std::uint32_t i = 0; i < kThreads * kMessages; ++i) {
      MsgHeader h{};
      iovec hv{&h, sizeof h};
      ASSERT_EQ(rx->recv_all({&hv, 1}), 0);
      ASSERT_LT(h.thread, kThreads);
      ASSERT_EQ(h.seq, next[h.thread]) << "thread " << h.thread << "'s messages out of order";
      ++next[h.thread];
      std::vector<std::uint8_t> body(h.length);
      iovec bv{body.data(), body.size()};
      ASSERT_EQ(rx->recv_all({&bv, 1}), 0);
      ASSERT_EQ(checksum(body), h.checksum) << "message " << h.seq << " of thread " << h.thread;
    }
    for (auto& s : senders) s.join();
    EXPECT_EQ(counters.messages_sent.load(), kThreads * kMessages);
    EXPECT_LE(counters.send_calls.load(), kThreads * kMessages);
  }
}

TEST(SendTurn, ConcurrentSendersNeverInterleave) { concurrent_senders_never_interleave(false); }

TEST(SendTurn, CombinedSendsArriveWholeAndInEachThreadsOrder) { concurrent_senders_never_interleave(true); }

}  // namespace
}  // namespace rig::engine
