#include "gpus.h"

#include <string>

#if defined(RIG_CUDA)
#include "devices/cuda/cuda_gpus.h"
#endif

namespace rig::info {

nlohmann::ordered_json gpu_facts() {
  using json = nlohmann::ordered_json;
#if defined(RIG_CUDA)
  const agent::CudaGpus* gpus = nullptr;
  if (const wire::Outcome o = agent::CudaGpus::probe(gpus); !o.ok()) return {{"count", 0}, {"why", o.why()}};
  json devices = json::array();
  for (const agent::CudaGpus::Gpu& g : gpus->gpus()) {
    devices.push_back({{"ordinal", g.ordinal}, {"name", g.name}, {"arch", g.arch}, {"l2_bytes", g.cache_bytes}});
  }
  return {{"count", devices.size()},
          {"driver", "CUDA " + agent::cuda_version_string(gpus->driver().version())},
          {"devices", devices}};
#else
  return {{"count", 0}, {"why", "this build has no CUDA backend (no CUDA toolkit at configure time)"}};
#endif
}

}  // namespace rig::info
