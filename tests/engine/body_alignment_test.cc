// The frame reader hands out every body in 8-byte-aligned memory (the decoders of kWelcome and
// kHandover refuse an unaligned one), wherever the frames before it left the stream: a kBytes
// frame with a payload of 1 to 8 bytes, then a ping, in one send, so both are buffered together
// and the ping's body starts at every offset modulo 8.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "rig/engine/counters.h"
#include "rig/engine/frame_reader.h"
#include "rig/engine/iov_cursor.h"
#include "rig/wire/codec.h"
#include "socket_pair.h"

namespace rig::engine {
namespace {

class BodyAlignment : public BackendTest {};

TEST_P(BodyAlignment, ABodyIsAlignedWhereverTheFrameBeforeItEnded) {
  const auto ping = wire::frame(wire::MsgType::kPing, wire::Ping{7});
  for (std::size_t payload = 1; payload <= 8; ++payload) {
    SCOPED_TRACE("after a payload of " + std::to_string(payload));
    const auto bytes = wire::frame(wire::MsgType::kBytes, wire::Bytes{1, 0, 1, 0, static_cast<std::uint32_t>(payload), 0}, payload);
    std::vector<char> all(reinterpret_cast<const char*>(&bytes), reinterpret_cast<const char*>(&bytes) + sizeof bytes);
    all.insert(all.end(), payload, 'p');
    all.insert(all.end(), reinterpret_cast<const char*>(&ping), reinterpret_cast<const char*>(&ping) + sizeof ping);
    Pair p = connected(GetParam());
    Counters counters;
    FrameReader reader(*p.b, counters);
    const iovec out = to_iov(all.data(), all.size());
    ASSERT_EQ(p.a->send_all({&out, 1}), 0);
    wire::FrameHeader h{};
    ASSERT_EQ(reader.next(h).err(), 0);
    std::span<const std::byte> body;
    ASSERT_EQ(reader.body(sizeof(wire::Bytes), body), 0);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(body.data()) % 8, 0u);
    ASSERT_EQ(reader.skip(payload), 0);
    ASSERT_EQ(reader.next(h).err(), 0);
    ASSERT_EQ(h.type, static_cast<std::uint16_t>(wire::MsgType::kPing));
    ASSERT_EQ(reader.body(sizeof(wire::Ping), body), 0);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(body.data()) % 8, 0u);
    wire::Ping got{};
    std::memcpy(&got, body.data(), sizeof got);
    EXPECT_EQ(got.nonce, 7u) << "the ping's body";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, BodyAlignment, kBackends, backend_test_name);

}  // namespace
}  // namespace rig::engine
