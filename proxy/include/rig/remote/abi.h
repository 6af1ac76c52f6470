// Rig_remote_abi.t: the capability record a proxy is given and its facts declare.
#pragma once

#include <cstdint>
#include <variant>

namespace rig::remote::abi {

struct Host {
  std::uint32_t reserved = 0;
};
struct Device {
  std::uint32_t id = 0;  ///< the agent's device id
};
using Capability = std::variant<Host, Device>;

}  // namespace rig::remote::abi
