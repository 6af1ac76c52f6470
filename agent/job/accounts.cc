#include "job/accounts.h"

#include <algorithm>

#include "devices/device_host.h"
#include "devices/device_sim.h"
#include "devices/gpu_devices.h"

namespace rig::agent {

std::vector<std::unique_ptr<DeviceBackend>> open_devices(const AgentConfig& config) {
  if (config.device_kind == DeviceKind::kCuda) {
    // The host reaches every device's memory as far as the host is concerned; each GPU's
    // account says whether it reaches the host's (the larger id's account decides).
    std::uint32_t gpus = 0;
    static_cast<void>(gpu_count(gpus));  // choose_device_kind found them (none: only the host)
    std::vector<std::unique_ptr<DeviceBackend>> devices;
    auto host = std::make_unique<HostDevice>(config.host_budget, gpus >= 63 ? ~0ull : ((2ull << gpus) - 1));
    host->set_pinning(host_pinning(config));  // host objects pinned: host<->GPU copies go by DMA
    host->set_host_memory(config.host_memory);
    devices.push_back(std::move(host));
    open_gpus(config, devices);
    return devices;
  }
  const std::uint32_t n = std::min(config.devices, wire::kMaxDevices - 1);
  const std::uint64_t all = n >= 63 ? ~0ull : ((2ull << n) - 1);
  // Simulated devices share host RAM: each reaches every other, unless one is told to act as a
  // device that does not (to exercise peer = false).
  const std::uint64_t isolated = config.isolated != 0 ? (1ull << config.isolated) : 0;
  std::vector<std::unique_ptr<DeviceBackend>> devices;
  auto host = std::make_unique<HostDevice>(config.host_budget, all & ~isolated);
  host->set_host_memory(config.host_memory);
  devices.push_back(std::move(host));
  const Completion completion =
      config.sim_completion == SimCompletion::kNow ? Completion::kDone : Completion::kLater;
  for (std::uint32_t i = 1; i <= n; ++i) {
    const std::uint64_t reach = i == config.isolated ? (1ull << i) : (all & ~isolated);
    auto sim = std::make_unique<SimDevice>(i, config.device_budget, reach, completion);
    if (config.sim_completion == SimCompletion::kWoken) sim->complete_when_armed();
    sim->set_host_memory(config.host_memory);  // simulated devices' memory is the host's RAM
    devices.push_back(std::move(sim));
  }
  return devices;
}

std::vector<wire::Account> accounts_of(const std::vector<std::unique_ptr<DeviceBackend>>& devices) {
  std::vector<wire::Account> accounts;
  accounts.reserve(devices.size());
  for (const auto& d : devices) accounts.push_back(d->account());
  return accounts;
}

bool reaches(const std::vector<std::unique_ptr<DeviceBackend>>& devices, std::uint32_t a, std::uint32_t b) {
  return (devices[std::max(a, b)]->account().reaches >> std::min(a, b)) & 1;
}

}  // namespace rig::agent
