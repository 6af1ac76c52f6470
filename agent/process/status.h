// The agent's answer to a status query (wire kStatusQuery / kStatus, kFeatureStatus): its own
// figures as a JSON text, at most wire::kMaxStatusText bytes (wire/PROTOCOL.md 5.18).
#pragma once

#include <cstdint>
#include <string>

#include "process/config.h"
#include "process/gauges.h"
#include "rig/engine/counters.h"

namespace rig::agent {

// A job's copies through staging, since it began.
struct StagedCopies {
  std::uint64_t streamed = 0;     // staged bytes copied to a device as they came (Incoming::stream)
  std::uint64_t copied_in = 0;    // staged bytes copied into a device's memory, as they came or not
  std::uint64_t streamed_out = 0;  // bytes of copies out of a device sent range by range
};

// The status text: the agent's version, uptime, the transport settings its jobs run with (so a
// benchmark against an agent it did not start can record them), jobs and connections, bytes in
// and out (the jobs that ended and the asking job so far), the host memory of all jobs (its
// limit, what they hold, the claims refused), the asking job's connection
// counters, its staging figures (StagedCopies), and every
// thread of this process (tid, name, CPU ns, context switches, the engine's system calls).
// Threads that do not fit within `max_bytes` are left out and counted ("threads_left_out").
std::string status_text(const AgentConfig& config, const Gauges& gauges, const engine::Counters& job,
                        const StagedCopies& staged, std::uint32_t max_bytes);

}  // namespace rig::agent
