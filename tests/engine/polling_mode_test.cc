// The reader's polling mode (FrameReader::set_spin_us): before a read would sleep, it asks the
// socket for bytes without waiting, again and again, for the bound; off, it never does.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "rig/engine/counters.h"
#include "rig/engine/frame_reader.h"
#include "rig/engine/iov_cursor.h"
#include "rig/wire/codec.h"
#include "rig/wire/messages.h"
#include "socket_pair.h"

namespace rig::engine {
namespace {

class PollingModeTest : public BackendTest {};

// Reads one ping with `reader` on a thread; the peer sends it once `ready()` holds (or after
// 10 s). Returns whether ready() held.
template <class Ready>
bool read_ping_sent_when(Socket& peer, FrameReader& reader, Ready ready) {
  wire::FrameHeader h{};
  int rc = -1;
  std::thread reading([&] { rc = reader.next(h).err(); });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool held = false;
  while (!(held = ready()) && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  const auto ping = wire::frame(wire::MsgType::kPing, wire::Ping{7});
  const iovec iov = to_iov(&ping, sizeof ping);
  EXPECT_EQ(peer.send_all({&iov, 1}), 0);
  reading.join();
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(h.type, static_cast<std::uint16_t>(wire::MsgType::kPing));
  return held;
}

TEST_P(PollingModeTest, AReaderInPollingModeAsksWithoutWaitingBeforeItSleeps) {
  Pair p = connected(GetParam());
  Counters counters;
  FrameReader reader(*p.b, counters);
  reader.set_spin_us(30'000'000);  // longer than the test: it spins until the bytes come
  EXPECT_TRUE(read_ping_sent_when(*p.a, reader, [&] { return counters.spin_reads.load() >= 3; }));
  EXPECT_GE(counters.spin_reads.load(), 3u);
}

TEST_P(PollingModeTest, AReaderOutOfPollingModeNeverSpins) {
  Pair p = connected(GetParam());
  Counters counters;
  FrameReader reader(*p.b, counters);
  EXPECT_TRUE(read_ping_sent_when(*p.a, reader, [] { return true; }));
  EXPECT_EQ(counters.spin_reads.load(), 0u);
}

TEST_P(PollingModeTest, ASpinThatEndsWithoutBytesFallsBackToSleepingUntilTheyCome) {
  Pair p = connected(GetParam());
  Counters counters;
  FrameReader reader(*p.b, counters);
  reader.set_spin_us(1000);
  // The spin (1 ms) is over once tries were counted and then none for 200 ms; the reader is
  // then asleep and must still get the ping.
  using clock = std::chrono::steady_clock;
  std::uint64_t last = 0;
  clock::time_point since = clock::now();
  EXPECT_TRUE(read_ping_sent_when(*p.a, reader, [&] {
    const std::uint64_t now = counters.spin_reads.load();
    if (now != last || now == 0) {
      last = now;
      since = clock::now();
      return false;
    }
    return clock::now() - since > std::chrono::milliseconds(200);
  }));
  EXPECT_GT(counters.spin_reads.load(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, PollingModeTest, kBackends, backend_test_name);

}  // namespace
}  // namespace rig::engine
