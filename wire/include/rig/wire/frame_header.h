// The common header in front of every message of protocol v1 (wire/PROTOCOL.md).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "rig/wire/limits.h"  // the bounds every receiver enforces past the header

namespace rig::wire {

static_assert(std::endian::native == std::endian::little,
              "protocol v1 is little-endian and this codec lays structs out natively");

inline constexpr std::uint32_t kMagic = 0x52474952;  // "RIGR" read as a little-endian u32
// 2: the authenticated handshake; 3: the agent's name in its challenge and in both proofs.
inline constexpr std::uint16_t kVersion = 3;

enum class MsgType : std::uint16_t {
  kHello = 1,     // client -> agent: opens the job's connection
  kWelcome = 2,   // agent -> client: the accounts of the devices the agent opened
  kRequest = 3,   // client -> agent: a call that has an answer
  kAnswer = 4,    // agent -> client: the answer of one request
  kRelease = 5,   // client -> agent: release one of the agent's objects or images
  kHandover = 6,  // client -> agent: the work of one value of a proxy's timeline
  kBytes = 7,     // either way: bytes of one copy part, named by (device, value, part, offset)
  kDone = 8,      // agent -> client: a value of a device is done
  kFailure = 9,   // either way: the sender failed the job, with its reason
  kClose = 10,    // client -> agent: the job closes
  kPing = 11,     // either way: keepalive
  // Striping (only once kFeatureStripes is accepted):
  kStripeGrant = 12,  // agent -> client, right after kWelcome: how to join data connections
  kJoin = 13,         // client -> agent as the first frame of a data connection; echoed back
  kStriped = 14,      // either way on the job's connection: bytes that cross on the stripes
  // Authentication (v2):
  kChallenge = 15,    // agent -> client: its nonce, after a hello or a join
  kProof = 16,        // client -> agent: its MAC, after a challenge
  // The status query (only once kFeatureStatus is accepted):
  kStatusQuery = 17,  // client -> agent: asks for the agent's figures
  kStatus = 18,       // agent -> client: the figures, a JSON text
};
inline constexpr std::uint16_t kMaxMsgType = 18;

// 8 bytes. `length` counts the bytes after the header: the message's fixed part, its tail and,
// for kBytes, the payload.
struct FrameHeader {
  std::uint32_t length;
  std::uint16_t type;   // MsgType
  std::uint16_t flags;  // 0 in v1; a receiver rejects anything else
};
static_assert(sizeof(FrameHeader) == 8);
static_assert(offsetof(FrameHeader, length) == 0);
static_assert(offsetof(FrameHeader, type) == 4);
static_assert(offsetof(FrameHeader, flags) == 6);

}  // namespace rig::wire
