#include "cuda_pinning.h"

#include <spdlog/spdlog.h>

namespace rig::agent {

void CudaPinning::pin(std::byte* p, std::uint64_t bytes) {
  // Small memory gains nothing by DMA that is worth a registration (a system call, pages locked;
  // and memory sharing a page with pinned memory cannot be registered again).
  if (bytes < kMinBytes) return;
  const CudaDriver& d = gpu_->driver();
  CUresult rc = gpu_->context() != nullptr ? d.cuCtxSetCurrent(gpu_->context()) : CUDA_ERROR_INVALID_CONTEXT;
  if (rc == CUDA_SUCCESS) rc = d.cuMemHostRegister(p, bytes, CU_MEMHOSTREGISTER_PORTABLE);
  if (rc == CUDA_SUCCESS) {
    pinned_.insert(p);
    return;
  }
  // Copies from it still work, by the driver's pageable path (slower, maybe synchronous).
  spdlog::debug("staging buffer of {} bytes left unpinned: {}", bytes, d.error("cuMemHostRegister", rc));
}

void CudaPinning::unpin(std::byte* p) {
  if (pinned_.erase(p) == 0) return;
  const CudaDriver& d = gpu_->driver();
  if (d.cuCtxSetCurrent(gpu_->context()) == CUDA_SUCCESS) d.cuMemHostUnregister(p);
}

CudaPinning::~CudaPinning() {
  // The pool unpins every buffer before it frees it; any left would stay pinned, so go now.
  for (std::byte* p : std::unordered_set<std::byte*>(pinned_)) unpin(p);
}

}  // namespace rig::agent
