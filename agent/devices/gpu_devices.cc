#include "devices/gpu_devices.h"

#include <spdlog/spdlog.h>

#include <stdexcept>

#if defined(RIG_CUDA)
#include "devices/cuda/cuda_gpus.h"
#include "devices/cuda/cuda_pinning.h"
#include "devices/cuda/device_cuda.h"
#endif

namespace rig::agent {

std::uint32_t gpu_count(std::string& why) {
#if defined(RIG_CUDA)
  const CudaGpus* gpus = CudaGpus::probe(why);
  return gpus != nullptr ? static_cast<std::uint32_t>(gpus->gpus().size()) : 0;
#else
  why = "this rig-agent was built without the CUDA backend (no CUDA toolkit at configure time)";
  return 0;
#endif
}

void choose_device_kind(AgentConfig& config) {
  if (config.device_kind == DeviceKind::kSim) return;
  std::string why;
  const std::uint32_t n = gpu_count(why);
  if (n == 0 && config.device_kind == DeviceKind::kCuda) {
    throw std::runtime_error("--device-kind cuda: " + why);
  }
  if (n == 0) {
    spdlog::warn("--device-kind auto: no GPU ({}); opening {} simulated devices", why, config.devices);
    config.device_kind = DeviceKind::kSim;
    return;
  }
  config.device_kind = DeviceKind::kCuda;
#if defined(RIG_CUDA)
  const CudaGpus* gpus = CudaGpus::probe(why);
  for (const CudaGpus::Gpu& g : gpus->gpus()) {
    spdlog::info("device {}: GPU {} {} ({}, {} bytes of L2), CUDA driver {}", g.ordinal + 1, g.ordinal, g.name,
                 g.arch, g.cache_bytes, cuda_version_string(gpus->driver().version()));
  }
#endif
}

void open_gpus(const AgentConfig& config, std::vector<std::unique_ptr<DeviceBackend>>& devices) {
#if defined(RIG_CUDA)
  std::string why;
  const CudaGpus* gpus = CudaGpus::probe(why);
  if (gpus == nullptr) throw std::runtime_error(why);  // choose_device_kind found them: never here
  for (const CudaGpus::Gpu& g : gpus->gpus()) {
    // The host's RAM (bit 0), its own memory, and the GPUs the driver says it accesses as peers.
    const std::uint64_t reaches = 1ull | (g.peers << 1);
    devices.push_back(CudaDevice::open(*gpus, g.ordinal, static_cast<std::uint32_t>(g.ordinal) + 1,
                                       config.device_budget, reaches));
  }
#else
  (void)config;
  (void)devices;
  throw std::runtime_error("this rig-agent was built without the CUDA backend");
#endif
}

std::shared_ptr<HostPinning> host_pinning(const AgentConfig& config) {
  if (config.device_kind != DeviceKind::kCuda) return nullptr;
#if defined(RIG_CUDA)
  std::string why;
  const CudaGpus* gpus = CudaGpus::probe(why);
  return gpus != nullptr ? std::make_shared<CudaPinning>(*gpus) : nullptr;
#else
  return nullptr;
#endif
}

}  // namespace rig::agent
