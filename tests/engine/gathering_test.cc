// The reader's gathering (FrameReader::set_gather): a stream that brings several frames per read
// sets the socket's receive low-water mark, so that one wake serves many frames; a stream of one
// frame per read never does; a wait that runs out ends it (and one that served little makes the
// next start later); a frame begun and a payload into place are read without waiting for the
// mark; and what the owner posted goes out before the gathered wait.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <cstdint>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rig/engine/counters.h"
#include "rig/engine/frame_reader.h"
#include "rig/engine/iov_cursor.h"
#include "rig/engine/tcp.h"
#include "rig/wire/codec.h"
#include "rig/wire/messages.h"
#include "socket_pair.h"

namespace rig::engine {
namespace {

class GatheringTest : public BackendTest {};

constexpr std::size_t kMark = 4096;
using Ping = wire::Framed<wire::Ping>;
constexpr std::size_t kPingsToTheMark = kMark / sizeof(Ping);

int low_water(const Socket& s) {
  int v = -1;
  socklen_t len = sizeof v;
  EXPECT_EQ(::getsockopt(s.fd(), SOL_SOCKET, SO_RCVLOWAT, &v, &len), 0);
  return v;
}

// Sends pings numbered from `first`, all in one send.
void send_pings(Socket& peer, std::uint64_t first, std::size_t n) {
  std::vector<Ping> pings;
  for (std::size_t i = 0; i < n; ++i) pings.push_back(wire::encode(wire::Ping{first + i}));
  const iovec iov = to_iov(pings.data(), pings.size() * sizeof(Ping));
  ASSERT_EQ(peer.send_all({&iov, 1}), 0);
}

// Reads one ping and checks its number.
void read_ping(FrameReader& reader, std::uint64_t expected) {
  wire::FrameHeader h{};
  ASSERT_EQ(reader.next(h).err(), 0);
  ASSERT_EQ(h.type, static_cast<std::uint16_t>(wire::MsgType::kPing));
  std::span<const std::byte> body;
  ASSERT_EQ(reader.body(h.length, body), 0);
  wire::Ping p{};
  std::memcpy(&p, body.data(), sizeof p);
  EXPECT_EQ(p.nonce, expected);
}

// `reads` exchanges of `per_read` pings: the peer sends them in one send, the reader reads them
// (all in one read: they are there before it reads). Returns the next ping's number.
std::uint64_t exchange(Socket& peer, FrameReader& reader, std::uint64_t first, int reads, std::size_t per_read) {
  for (int r = 0; r < reads; ++r) {
    send_pings(peer, first, per_read);
    for (std::size_t i = 0; i < per_read; ++i) read_ping(reader, first++);
  }
  return first;
}

// Runs `read` on a thread: whether it ended within 10 s (if not, the peer's shutdown ends it).
template <class Read>
bool ends(Socket& peer, Read read) {
  auto reading = std::async(std::launch::async, read);
  const bool ended = reading.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!ended) peer.shutdown();  // let the reader go, so the test ends
  return ended;
}

// A reader that gathers, with the window that started it read: the next ping is `next`.
struct Gathering {
  Pair p;
  Counters counters;
  FrameReader reader;
  std::uint64_t next = 0;
  Gathering(Backend backend, int wait_us) : p(connected(backend)), reader(*p.b, counters) {
    reader.set_gather(kMark, wait_us);
    next = exchange(*p.a, reader, 0, ReadWait::kGatherWindowReads + 1, ReadWait::kGatherMessagesPerRead + 1);
  }
};

TEST_P(GatheringTest, AStreamOfSeveralFramesPerReadStartsGatheringWithTheMarkSet) {
  Gathering g(GetParam(), 1000);
  EXPECT_TRUE(g.reader.gathering());
  EXPECT_EQ(g.counters.gathers.load(), 1u);
  EXPECT_EQ(low_water(*g.p.b), static_cast<int>(kMark));
}

TEST_P(GatheringTest, AStreamOfOneFramePerReadNeverGathers) {
  Pair p = connected(GetParam());
  Counters counters;
  FrameReader reader(*p.b, counters);
  reader.set_gather(kMark, 1000);
  exchange(*p.a, reader, 0, 4 * ReadWait::kGatherWindowReads, 1);
  EXPECT_FALSE(reader.gathering());
  EXPECT_EQ(counters.gathers.load(), 0u);
  EXPECT_EQ(low_water(*p.b), 1);
}

TEST_P(GatheringTest, FramesThatContinueAMessageDoNotCountTowardsGathering) {
  Pair p = connected(GetParam());
  Counters counters;
  FrameReader reader(*p.b, counters);
  reader.set_gather(kMark, 1000);
  // Each read: one message of three frames (as a handover with the bytes of two parts).
  std::uint64_t n = 0;
  for (int r = 0; r < 4 * ReadWait::kGatherWindowReads; ++r) {
    send_pings(*p.a, n, 3);
    for (int i = 0; i < 3; ++i) {
      wire::FrameHeader h{};
      ASSERT_EQ(reader.next(h, i > 0).err(), 0);
      std::span<const std::byte> body;
      ASSERT_EQ(reader.body(h.length, body), 0);
      ++n;
    }
  }
  EXPECT_FALSE(reader.gathering());
  EXPECT_EQ(counters.gathers.load(), 0u);
}

TEST_P(GatheringTest, TheEndOfTheStreamEndsAGatheredWait) {
  Gathering g(GetParam(), 60'000'000);
  int rc = -1;
  EXPECT_TRUE(ends(*g.p.a, [&] {
    ::shutdown(g.p.a->fd(), SHUT_WR);
    wire::FrameHeader h{};
    rc = g.reader.next(h).err();
  }));
  EXPECT_EQ(rc, wire::kStreamEnded);  // a clean end between frames
  EXPECT_FALSE(g.reader.gathering());
}

TEST_P(GatheringTest, TheEndOfTheStreamInsideAMessageIsALostConnection) {
  Gathering g(GetParam(), 1000);
  ::shutdown(g.p.a->fd(), SHUT_WR);
  wire::FrameHeader h{};
  EXPECT_EQ(g.reader.next(h, /*within_message=*/true).err(), -ECONNRESET);  // a handover's bytes cut short
}

TEST_P(GatheringTest, AGatheredReadTakesEveryFrameThatCameAndKeepsTheirOrder) {
  Gathering g(GetParam(), 1000);
  const std::uint64_t reads = g.counters.reads.load();
  send_pings(*g.p.a, g.next, kPingsToTheMark);
  for (std::size_t i = 0; i < kPingsToTheMark; ++i) read_ping(g.reader, g.next++);
  EXPECT_EQ(g.counters.reads.load(), reads + 1);
  EXPECT_TRUE(g.reader.gathering());
}

TEST_P(GatheringTest, AWaitThatRunsOutEndsTheGathering) {
  Gathering g(GetParam(), 20'000);
  send_pings(*g.p.a, g.next, 1);
  // After the wait ran out (20 ms): the mark was not reached; the ping is read all the same.
  EXPECT_TRUE(ends(*g.p.a, [&] { read_ping(g.reader, g.next++); }));
  EXPECT_FALSE(g.reader.gathering());
  EXPECT_EQ(low_water(*g.p.b), 1);
  send_pings(*g.p.a, g.next, 1);
  EXPECT_TRUE(ends(*g.p.a, [&] { read_ping(g.reader, g.next++); }));  // read as before
}

TEST_P(GatheringTest, AGatheringThatServedLittleNeedsALongerBusyWindowNextTime) {
  Gathering g(GetParam(), 1000);
  send_pings(*g.p.a, g.next, 1);
  read_ping(g.reader, g.next++);  // the wait runs out: the gathering ends, having reached no mark
  ASSERT_FALSE(g.reader.gathering());
  // That read is the first of the next window: with it, one window's worth and one more read
  // would start a gathering without the backoff, two windows' worth and one more with it.
  constexpr int kWindow = ReadWait::kGatherWindowReads;
  g.next = exchange(*g.p.a, g.reader, g.next, kWindow, ReadWait::kGatherMessagesPerRead + 1);
  EXPECT_FALSE(g.reader.gathering()) << "started again after one window";
  g.next = exchange(*g.p.a, g.reader, g.next, kWindow, ReadWait::kGatherMessagesPerRead + 1);
  EXPECT_TRUE(g.reader.gathering()) << "not started after two windows";
  EXPECT_EQ(g.counters.gathers.load(), 2u);
}

// Runs `read` on a thread while the peer sends `rest` 50 ms later (long enough for the reader
// to wait for it: a reader that waits for the mark would not see it for a minute). Whether the
// read ended within 10 s.
template <class Read>
bool read_ends_when_rest_comes(Socket& peer, const void* rest, std::size_t n, Read read) {
  return ends(peer, [&] {
    std::thread sending([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const iovec iov = to_iov(rest, n);
      EXPECT_EQ(peer.send_all({&iov, 1}), 0);
    });
    read();
    sending.join();
  });
}

TEST_P(GatheringTest, AFrameBegunIsReadWithoutWaitingForTheMark) {
  Gathering g(GetParam(), 60'000'000);
  // A mark's worth of pings and the next ping's header, then (later) its body.
  std::vector<Ping> pings;
  for (std::size_t i = 0; i <= kPingsToTheMark; ++i) pings.push_back(wire::encode(wire::Ping{g.next + i}));
  const iovec head[2] = {to_iov(pings.data(), kPingsToTheMark * sizeof(Ping)), to_iov(&pings.back(), sizeof(wire::FrameHeader))};
  ASSERT_EQ(g.p.a->send_all(head), 0);
  for (std::size_t i = 0; i < kPingsToTheMark; ++i) read_ping(g.reader, g.next++);
  wire::FrameHeader h{};
  ASSERT_EQ(g.reader.next(h).err(), 0);
  std::span<const std::byte> body;
  int rc = -1;
  EXPECT_TRUE(read_ends_when_rest_comes(*g.p.a, &pings.back().msg, sizeof(wire::Ping),
                                        [&] { rc = g.reader.body(h.length, body); }));
  ASSERT_EQ(rc, 0);
  wire::Ping p{};
  std::memcpy(&p, body.data(), sizeof p);
  EXPECT_EQ(p.nonce, g.next);
  EXPECT_FALSE(g.reader.gathering());
}

TEST_P(GatheringTest, AFrameThatContinuesAMessageIsReadWithoutWaitingForTheMark) {
  Gathering g(GetParam(), 60'000'000);
  const auto ping = wire::encode(wire::Ping{g.next});
  wire::FrameHeader h{};
  int rc = -1;
  EXPECT_TRUE(read_ends_when_rest_comes(*g.p.a, &ping, sizeof ping, [&] { rc = g.reader.next(h, true).err(); }));
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(h.type, static_cast<std::uint16_t>(wire::MsgType::kPing));
}

TEST_P(GatheringTest, APayloadReceivedIntoPlaceEndsTheGatheringFirst) {
  Gathering g(GetParam(), 60'000'000);
  std::vector<std::uint8_t> sent(100 * 1024), got(sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<std::uint8_t>(i * 7);
  const std::size_t tail = 100;  // less than the mark: a receive waiting for the mark would stall
  const iovec first = to_iov(sent.data(), sent.size() - tail);
  ASSERT_EQ(g.p.a->send_all({&first, 1}), 0);
  int rc = -1;
  EXPECT_TRUE(read_ends_when_rest_comes(*g.p.a, sent.data() + sent.size() - tail, tail, [&] {
    const iovec into = to_iov(got.data(), got.size());
    rc = g.reader.payload({&into, 1});
  }));
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(got, sent);
  EXPECT_FALSE(g.reader.gathering());
}

TEST_P(GatheringTest, WhatTheOwnerPostedGoesOutBeforeTheGatheredWait) {
  Gathering g(GetParam(), 60'000'000);
  const auto answer = wire::encode(wire::Ping{4242});
  const iovec posted = to_iov(&answer, sizeof answer);
  bool once = false;
  g.reader.set_before_read([&] { return std::exchange(once, true) ? 0 : g.p.b->post_send({&posted, 1}); });
  int finished = -1;
  // The poster's own thread reads and then ends its posted send.
  auto reading = std::async(std::launch::async, [&] {
    read_ping(g.reader, g.next);
    finished = g.p.b->finish_send();
  });
  // The peer sees the posted bytes while the reader waits for the mark (a minute).
  Ping seen{};
  const int rc = recv_within(g.p.a->fd(), &seen, sizeof seen, 10'000);
  send_pings(*g.p.a, g.next, kPingsToTheMark);  // the mark: the reader reads
  reading.wait();
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(seen.msg.nonce, 4242u);
  EXPECT_EQ(finished, 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, GatheringTest, kBackends, backend_test_name);

}  // namespace
}  // namespace rig::engine
