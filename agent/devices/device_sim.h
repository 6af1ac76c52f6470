// A simulated device: memory in the agent's RAM with a device's facts ("simN", arch "sim"), for
// tests, the demo and benchmarks on machines without accelerators. It can report its values
// at once or, as a GPU's stream does, from the executor's next poll.
#pragma once

#include "devices/ram_device.h"

namespace rig::agent {

class SimDevice final : public RamDevice {
 public:
  SimDevice(std::uint32_t id, std::uint64_t budget, std::uint64_t reaches, Completion completion);

  static wire::Account facts(std::uint32_t id, std::uint64_t budget, std::uint64_t reaches);
  static constexpr std::uint64_t kCacheBytes = 32ull << 20;
};

}  // namespace rig::agent
