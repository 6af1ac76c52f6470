// Pins host memory for every GPU's DMA (cuMemHostRegister, portable to all contexts): what a
// job's staging pool and the host's objects use while the job has GPUs, so received bytes go to
// a GPU, packed bytes come back, and host<->GPU copies run by DMA rather than through the
// driver's pageable staging. Written against the
// driver API; not yet run on a GPU.
#pragma once

#include <memory>
#include <unordered_set>

#include "cuda_gpus.h"
#include "host_pinning.h"

namespace rig::agent {

class CudaPinning final : public HostPinning {
 public:
  // Registers in the first GPU's primary context, held while something is pinned (so a job that
  // pins nothing does not hold GPU 0, and a lost GPU 0 pins nothing more); portable, so every
  // GPU's copies see the buffers pinned.
  explicit CudaPinning(const CudaGpus& gpus) : gpus_(gpus) {}
  ~CudaPinning() override;

  // Registers the whole pages from p (page-aligned) that hold `bytes`, at every size: a tiny copy
  // from pageable memory would wait for the stream's earlier work inside the driver's call.
  void pin(std::byte* p, std::uint64_t bytes) noexcept override;
  void unpin(std::byte* p) noexcept override;

 private:
  const CudaGpus& gpus_;
  std::unique_ptr<CudaGpus::Hold> gpu_;  // while pinned_ is not empty (and within pin())
  std::unordered_set<std::byte*> pinned_;  // touched only by the job's session thread
};

}  // namespace rig::agent
