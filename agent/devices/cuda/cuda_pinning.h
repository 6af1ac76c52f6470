// Pins host memory for every GPU's DMA (cuMemHostRegister, portable to all contexts): what a
// job's staging pool and the host's objects use while the job has GPUs, so received bytes go to
// a GPU, packed bytes come back, and host<->GPU copies run by DMA rather than through the
// driver's pageable staging. Written against the driver API; not yet run on a GPU.
#pragma once

#include <cstddef>
#include <memory>
#include <unordered_map>
#include <vector>

#include "devices/cuda/cuda_gpus.h"
#include "devices/host_pinning.h"

namespace rig::agent {

class CudaPinning final : public HostPinning {
 public:
  // Registers in the primary context of the first GPU that is not lost (GPU 0 while it works),
  // held while memory is pinned there: a job that pins nothing holds no GPU, a lost GPU pins
  // nothing more (the next one does), and a lost GPU reopens once the memory pinned under it
  // before was unpinned. Portable, so every GPU's copies see the buffers pinned.
  explicit CudaPinning(const CudaGpus& gpus);
  ~CudaPinning() override;

  // Registers the whole pages from p (page-aligned) that hold `bytes`, at every size: a tiny copy
  // from pageable memory would wait for the stream's earlier work inside the driver's call.
  void pin(std::byte* p, std::uint64_t bytes) noexcept override;
  void unpin(std::byte* p) noexcept override;
  void leave_to_given_up_gpu(std::byte* p, int gpu) noexcept override;

 private:
  // One GPU's context as this pinning uses it: held while `pinned` buffers are registered there
  // (and within pin()).
  struct Context {
    std::unique_ptr<CudaGpus::Hold> gpu;
    std::size_t pinned = 0;
  };
  // Registers p in GPU `ordinal`'s context: CUDA_SUCCESS, or why not (CUDA_ERROR_INVALID_CONTEXT
  // where the GPU is lost or has no context).
  CUresult register_in(int ordinal, std::byte* p, std::uint64_t bytes) noexcept;
  // Lets go of GPU `ordinal` if nothing is pinned under it.
  void release_if_unused(int ordinal) noexcept;

  const CudaGpus& gpus_;
  std::vector<Context> contexts_;  // by ordinal
  // Each pinned buffer and the GPU whose context registered it; touched only by the job's
  // session thread, and after the job by the release of work a GPU gave up that names the
  // staging (CudaGpus::keep_until_destroyed, which releases one at a time).
  std::unordered_map<std::byte*, int> pinned_;
  bool said_unpinned_ = false;  // the operator was told this job left memory unpinned
};

}  // namespace rig::agent
