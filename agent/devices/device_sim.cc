#include "devices/device_sim.h"

#include <string>

namespace rig::agent {

wire::Account SimDevice::facts(std::uint32_t id, std::uint64_t budget, std::uint64_t reaches) {
  wire::Account a{};
  a.id = id;
  a.kind = static_cast<std::uint32_t>(wire::AccountKind::kDevice);
  a.budget = budget;
  a.cache_bytes = kCacheBytes;
  a.reaches = reaches;
  wire::set_fixed_string(a.name, "sim" + std::to_string(id));
  wire::set_fixed_string(a.arch, "sim");
  return a;
}

SimDevice::SimDevice(std::uint32_t id, std::uint64_t budget, std::uint64_t reaches, Completion completion)
    : RamDevice(facts(id, budget, reaches), completion) {}

}  // namespace rig::agent
