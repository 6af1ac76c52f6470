#include "devices/device_host.h"

#include <sys/utsname.h>
#include <unistd.h>

namespace rig::agent {

wire::Account HostDevice::facts(std::uint64_t budget, std::uint64_t reaches) {
  wire::Account host{};
  host.id = 0;
  host.kind = static_cast<std::uint32_t>(wire::AccountKind::kHost);
  host.budget = budget;
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  host.cache_bytes = l3 > 0 ? static_cast<std::uint64_t>(l3) : 0;
  host.reaches = reaches;
  wire::set_fixed_string(host.name, "host");
  utsname u{};
  wire::set_fixed_string(host.arch, ::uname(&u) == 0 ? u.machine : "unknown");
  return host;
}

HostDevice::HostDevice(std::uint64_t budget, std::uint64_t reaches)
    : RamDevice(facts(budget, reaches), Completion::kDone) {}

}  // namespace rig::agent
