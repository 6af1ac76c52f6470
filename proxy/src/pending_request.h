// Internal: a request whose caller waits for its answer (on the caller's stack).
#pragma once

#include <atomic>
#include <cstdint>

#include "link_core.h"

namespace rig::remote {

struct PendingRequest {
  std::uint64_t id = 0;  // immutable while registered
  AgentAnswer answer;    // written by the receiving thread before done's release
  // release by the receiving thread once answer is written; acquire by the caller.
  std::atomic<std::uint32_t> done{0};
};

// The slot value while the receiving thread fills a request's answer.
inline PendingRequest* busy_request() {
  return reinterpret_cast<PendingRequest*>(alignof(PendingRequest));
}

}  // namespace rig::remote
