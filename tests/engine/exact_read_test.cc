// The frame reader's exact mode (set_exact_probe): while a large copy into this process is
// expected, no read runs into a kBytes payload, however the frames before it and its header
// and fixed part came in pieces, so every payload byte is received straight into place.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rig/engine/counters.h"
#include "rig/engine/frame_reader.h"
#include "rig/engine/iov_cursor.h"
#include "rig/wire/codec.h"
#include "socket_pair.h"

namespace rig::engine {
namespace {

class ExactRead : public BackendTest {
 protected:
  static constexpr std::size_t kPayload = 4096;
  // Sends `bytes`, all of it in the kernel's receive queue before the reader's next read
  // (loopback delivers a send before it returns).
  static void send(Socket& s, const void* bytes, std::size_t n) {
    if (n == 0) return;
    const iovec iov = to_iov(bytes, n);
    ASSERT_EQ(s.send_all({&iov, 1}), 0);
  }
};

// A ping (shorter than the exact window) then a kBytes frame, cut after `first` bytes of the
// kBytes frame's header and fixed part: the reader reads the first piece, the rest comes after.
TEST_P(ExactRead, NoPayloadByteIsBufferedWhereverTheFixedPartWasCut) {
  const auto ping = wire::frame(wire::MsgType::kPing, wire::Ping{7});
  const auto bytes = wire::frame(wire::MsgType::kBytes, wire::Bytes{1, 0, 1, 0, kPayload, 0}, kPayload);
  const std::vector<char> payload(kPayload, 'p');
  for (const bool after_ping : {false, true}) {
    for (std::size_t first = 0; first <= sizeof bytes; ++first) {
      // Without a ping, a cut inside the header would leave next() waiting on this thread.
      if (!after_ping && first > 0 && first < sizeof(wire::FrameHeader)) continue;
      SCOPED_TRACE(std::string(after_ping ? "after a ping, " : "") + "cut after " + std::to_string(first));
      Pair p = connected(GetParam());
      Counters counters;
      FrameReader reader(*p.b, counters);
      reader.set_exact_probe([] { return true; });
      const char* at = reinterpret_cast<const char*>(&bytes);
      std::vector<char> rest(at + first, at + sizeof bytes);
      rest.insert(rest.end(), payload.begin(), payload.end());
      wire::FrameHeader h{};
      if (after_ping) send(*p.a, &ping, sizeof ping);
      send(*p.a, &bytes, first);
      if (after_ping) {
        ASSERT_EQ(reader.next(h).err(), 0);
        std::span<const std::byte> body;
        ASSERT_EQ(reader.body(sizeof(wire::Ping), body), 0);
      }
      if (after_ping || first == 0) send(*p.a, rest.data(), rest.size());
      ASSERT_EQ(reader.next(h).err(), 0);
      ASSERT_EQ(h.type, static_cast<std::uint16_t>(wire::MsgType::kBytes));
      if (!after_ping && first != 0) send(*p.a, rest.data(), rest.size());
      std::span<const std::byte> fixed;
      ASSERT_EQ(reader.body(sizeof(wire::Bytes), fixed), 0);
      std::vector<char> got(kPayload);
      const iovec iov{got.data(), got.size()};
      ASSERT_EQ(reader.payload({&iov, 1}), 0);
      EXPECT_EQ(got, payload);
      EXPECT_EQ(counters.payload_bytes_copied.load(), 0u);
      EXPECT_EQ(counters.payload_bytes_direct.load(), kPayload);
    }
  }
}

// Without the probe the reader takes what the buffer has room for: the payload's first bytes
// come through the buffer (the counter the test above reads does count them).
TEST_P(ExactRead, WithoutTheProbeAPayloadSentWithItsHeaderIsPartlyBuffered) {
  const auto bytes = wire::frame(wire::MsgType::kBytes, wire::Bytes{1, 0, 1, 0, kPayload, 0}, kPayload);
  std::vector<char> all(reinterpret_cast<const char*>(&bytes), reinterpret_cast<const char*>(&bytes) + sizeof bytes);
  all.insert(all.end(), kPayload, 'p');
  Pair p = connected(GetParam());
  Counters counters;
  FrameReader reader(*p.b, counters);
  send(*p.a, all.data(), all.size());
  wire::FrameHeader h{};
  ASSERT_EQ(reader.next(h).err(), 0);
  std::span<const std::byte> fixed;
  ASSERT_EQ(reader.body(sizeof(wire::Bytes), fixed), 0);
  std::vector<char> got(kPayload);
  const iovec iov{got.data(), got.size()};
  ASSERT_EQ(reader.payload({&iov, 1}), 0);
  EXPECT_EQ(counters.payload_bytes_copied.load(), kPayload);
  EXPECT_EQ(counters.payload_bytes_direct.load(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, ExactRead, kBackends, backend_test_name);

}  // namespace
}  // namespace rig::engine
