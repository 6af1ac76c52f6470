// The machine's GPUs as the agent's devices: which kind of devices the agent opens (settled at
// start from --device-kind), and a job's CUDA devices, ids 1.. in the driver's order after the
// host. Compiled in every build; without the CUDA backend (no toolkit at configure time) there
// are no GPUs, and the reason says so.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "devices/device.h"
#include "devices/host_pinning.h"
#include "process/config.h"

namespace rig::agent {

// The GPUs this agent can open in `n` (> 0), or -ENODEV with why not, `n` 0 (no backend, no
// driver, a driver too old, no GPU).
wire::Outcome gpu_count(std::uint32_t& n);

// Settles config.device_kind: kCuda without a GPU fails (-ENODEV, "--device-kind cuda: " and
// why); kAuto becomes kCuda where a GPU is found and kSim otherwise, logging why. Logs the GPUs
// opened.
wire::Outcome choose_device_kind(AgentConfig& config);

// Appends a job's devices for the GPUs (config.device_kind is kCuda, so choose_device_kind found
// them: the probe's answer is kept, and cannot fail here), each with its budget min(free memory
// now, config.device_budget).
void open_gpus(const AgentConfig& config, std::vector<std::unique_ptr<DeviceBackend>>& devices);

// What pins a job's staging buffers for its GPUs' DMA (config.device_kind is kCuda), else null.
std::shared_ptr<HostPinning> host_pinning(const AgentConfig& config);

}  // namespace rig::agent
