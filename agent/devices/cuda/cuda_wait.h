// Waiting for a GPU's work that may wait on a lost GPU's (a cuStreamWaitEvent on another GPU's
// event, which the driver's documentation does not promise ever ends once that GPU broke):
// polled, never a blocking driver call, and given up once a GPU it waited on has been lost for
// a grace, so that no thread of the agent waits on it forever.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

#include "devices/cuda/cuda_gpus.h"

namespace rig::agent {

// How long a wait goes on once a GPU it waited on is lost: a wait on a lost GPU's work that the
// driver ends (with an error or not) ends well within it, so this only bounds one that never
// would.
inline constexpr auto kLostWaitGrace = std::chrono::seconds(2);

// Polls `query()` (a cuStreamQuery or cuEventQuery, which makes any context it needs current)
// with pauses growing from 20 µs to 1 ms until it answers other than CUDA_ERROR_NOT_READY, and
// answers that. Answers CUDA_ERROR_NOT_READY once one of the GPUs in `waited` (bit j: GPU j;
// CudaGpus::lost_among asks each) has been lost for kLostWaitGrace with the work still not done.
// `stuck_since` carries that clock across several waits for one piece of work (start it at
// the epoch). Never throws.
template <class Query>
CUresult wait_unless_lost(const CudaGpus& gpus, std::uint64_t waited, Query query,
                          std::chrono::steady_clock::time_point& stuck_since) noexcept {
  using Clock = std::chrono::steady_clock;
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    const CUresult rc = query();
    if (rc != CUDA_ERROR_NOT_READY) return rc;
    const Clock::time_point now = Clock::now();
    if (stuck_since == Clock::time_point{}) {
      if (gpus.lost_among(waited) >= 0) stuck_since = now;  // a lost GPU stays lost while held
    } else if (now - stuck_since >= kLostWaitGrace) {
      return CUDA_ERROR_NOT_READY;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

}  // namespace rig::agent
