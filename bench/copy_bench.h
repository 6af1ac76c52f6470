// Bandwidth figures (GB/s, 1e9 bytes per second): copies host -> device and device -> host over
// the size sweep, strided rows both ways, and device -> device on the agent. Each copy is one
// handover; a timed batch submits several back to back and waits for the last one's value. Every
// copy's bytes are checked (BytesDiffer otherwise).
#pragma once

#include "fixture.h"
#include "report.h"
#include "settings.h"

namespace rig::bench {

void bench_copies(Fixture& fx, const Settings& s, Report& report);

}  // namespace rig::bench
