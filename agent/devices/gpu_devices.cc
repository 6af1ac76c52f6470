#include "devices/gpu_devices.h"

#include <spdlog/spdlog.h>

#include <cassert>

#if defined(RIG_CUDA)
#include "devices/cuda/cuda_gpus.h"
#include "devices/cuda/cuda_pinning.h"
#include "devices/cuda/device_cuda.h"
#endif

namespace rig::agent {

wire::Outcome gpu_count(std::uint32_t& n) {
  n = 0;
#if defined(RIG_CUDA)
  const CudaGpus* gpus = nullptr;
  RIG_RETURN_IF_FAILED(CudaGpus::probe(gpus));
  n = static_cast<std::uint32_t>(gpus->gpus().size());
  return {};
#else
  return wire::Outcome::failed(-ENODEV,
                               "this rig-agent was built without the CUDA backend (no CUDA toolkit at configure time)");
#endif
}

wire::Outcome choose_device_kind(AgentConfig& config) {
  if (config.device_kind == DeviceKind::kSim) return {};
  std::uint32_t n = 0;
  const wire::Outcome found = gpu_count(n);
  if (!found.ok() && config.device_kind == DeviceKind::kCuda) {
    return wire::Outcome::failed(found.err(), "--device-kind cuda: " + found.why());
  }
  if (!found.ok()) {
    spdlog::warn("--device-kind auto: no GPU ({}); opening {} simulated devices", found.why(), config.devices);
    config.device_kind = DeviceKind::kSim;
    return {};
  }
  config.device_kind = DeviceKind::kCuda;
#if defined(RIG_CUDA)
  const CudaGpus* gpus = nullptr;
  static_cast<void>(CudaGpus::probe(gpus));  // found above: the same answer
  for (const CudaGpus::Gpu& g : gpus->gpus()) {
    spdlog::info("device {}: GPU {} {} ({}, {} bytes of L2), CUDA driver {}", g.ordinal + 1, g.ordinal, g.name,
                 g.arch, g.cache_bytes, cuda_version_string(gpus->driver().version()));
  }
#endif
  return {};
}

void open_gpus(const AgentConfig& config, std::vector<std::unique_ptr<DeviceBackend>>& devices) {
#if defined(RIG_CUDA)
  const CudaGpus* gpus = nullptr;
  [[maybe_unused]] const wire::Outcome probed = CudaGpus::probe(gpus);
  assert(probed.ok() && "choose_device_kind found the GPUs, and the probe's answer is kept");
  if (gpus == nullptr) return;
  for (const CudaGpus::Gpu& g : gpus->gpus()) {
    // The host's RAM (bit 0), its own memory, and the GPUs the driver says it accesses as peers.
    const std::uint64_t reaches = 1ull | (g.peers << 1);
    devices.push_back(CudaDevice::open(*gpus, g.ordinal, static_cast<std::uint32_t>(g.ordinal) + 1,
                                       config.device_budget, reaches));
  }
#else
  (void)config;
  (void)devices;
  assert(false && "kCuda is never chosen without the CUDA backend (choose_device_kind)");
#endif
}

std::shared_ptr<HostPinning> host_pinning(const AgentConfig& config) {
  if (config.device_kind != DeviceKind::kCuda) return nullptr;
#if defined(RIG_CUDA)
  const CudaGpus* gpus = nullptr;
  return CudaGpus::probe(gpus).ok() ? std::make_shared<CudaPinning>(*gpus) : nullptr;
#else
  return nullptr;
#endif
}

}  // namespace rig::agent
