// Tiny handovers: a handover whose only part copies Settings::tiny_bytes (64) of a region into
// this process's memory. Figures: the round trip of one (from before room/submit until the word
// is seen at its value, p50 and p99 in µs); the rate of handovers pipelined from one thread
// (submit a batch, wait for the last value; msg/s); and the combined rate of several threads, each
// pipelining on a proxy of its own device. Every copy's bytes are checked.
#pragma once

#include <cstdint>

#include "fixture.h"
#include "report.h"
#include "rig/wire/frame_header.h"
#include "rig/wire/messages.h"
#include "settings.h"

namespace rig::bench {

// Bytes of a tiny handover's message on the wire: header, fixed part, one copy part.
inline constexpr std::uint32_t kTinyHandoverMessageBytes =
    sizeof(wire::FrameHeader) + sizeof(wire::Handover) + sizeof(wire::Part);

void bench_handovers(Fixture& fx, const Settings& s, Report& report);

}  // namespace rig::bench
