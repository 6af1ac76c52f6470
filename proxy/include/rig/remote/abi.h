// Rig_remote_abi.t: the capability record a proxy is given and its facts declare.
#pragma once

#include <cstdint>
#include <variant>

namespace rig::remote::abi {

/// The capability of the machine's host: a proxy made with it must be of the agent's account 0.
struct Host {
  std::uint32_t reserved = 0;  ///< unused: nothing in rig-remote reads it (the page matches Host _)
};
/// The capability of one of the agent's devices: id must be the id of the account the proxy is
/// made for.
struct Device {
  std::uint32_t id = 0;  ///< the agent's device id
};
/// Rig_remote_abi.t: Host or Device.
using Capability = std::variant<Host, Device>;

}  // namespace rig::remote::abi
