// The GPUs rig-info sees, as rig-agent --device-kind auto would: the agent's own discovery
// (CudaGpus::probe: libcuda.so.1 loaded at run time, cuInit and the device queries; no context
// is made), or none with why (a build without the CUDA backend, no driver, a driver too old,
// no GPU).
#pragma once

#include <nlohmann/json.hpp>

namespace rig::info {

// {"count", "driver", "devices": [{"ordinal", "name", "arch", "l2_bytes"}]}, or {"count": 0, "why"}.
nlohmann::ordered_json gpu_facts();

}  // namespace rig::info
