// The machine's host as a device: account 0, the agent's own RAM, and the one device whose
// queue runs words parts (rig.program code, interpreted on the session's thread).
#pragma once

#include "devices/ram_device.h"

namespace rig::agent {

class HostDevice final : public RamDevice {
 public:
  // `reaches`: the devices whose memory the host reaches (bit i for device i).
  HostDevice(std::uint64_t budget, std::uint64_t reaches);

  // The host's facts: its architecture (uname) and last-level cache (sysconf).
  static wire::Account facts(std::uint64_t budget, std::uint64_t reaches);
};

}  // namespace rig::agent
