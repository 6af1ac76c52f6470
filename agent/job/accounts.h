// The devices this agent opens for a job, and the accounts it announces for them in the
// welcome: id 0 the machine's host, then the simulated devices 1..N or the GPUs (in the
// driver's order).
#pragma once

#include <memory>
#include <vector>

#include "devices/device.h"
#include "process/config.h"

namespace rig::agent {

// A job's instances of the agent's devices, in id order (each holds the job's budget there).
std::vector<std::unique_ptr<DeviceBackend>> open_devices(const AgentConfig& config);

// Their accounts, in the same order.
std::vector<wire::Account> accounts_of(const std::vector<std::unique_ptr<DeviceBackend>>& devices);

// Whether device `a` may map the memory of device `b`, as the account with the larger id
// describes it (the page's peer rule).
bool reaches(const std::vector<std::unique_ptr<DeviceBackend>>& devices, std::uint32_t a, std::uint32_t b);

}  // namespace rig::agent
