// What one rig-agent offers its jobs: the devices it opens, their budgets, and the transport's
// settings. Set by rig-agent's options; read by every job's session.
#pragma once

#include <cstdint>

#include "rig/engine/socket.h"

namespace rig::agent {

// How a simulated device reports a value done: at once (as the machine's host does), or later,
// from the executor's next poll, as an asynchronous device (a GPU's stream) does.
enum class SimCompletion { kNow, kLater };

struct AgentConfig {
  std::uint32_t devices = 2;                       // simulated devices besides the host
  std::uint64_t device_budget = 1ull << 30;        // bytes a job may hold on each
  std::uint64_t host_budget = 1ull << 30;
  std::uint64_t instruction_budget = 1ull << 32;   // per launch of a words part
  std::uint32_t isolated = 0;                      // >0: this simulated device reaches no other
  SimCompletion sim_completion = SimCompletion::kNow;
  engine::Backend backend = engine::default_backend();
  std::uint32_t max_stripes = 8;                   // data connections a job may join (0: none)
};

}  // namespace rig::agent
