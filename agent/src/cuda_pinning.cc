#include "cuda_pinning.h"

#include <spdlog/spdlog.h>

#include <cassert>
#include <cstdint>
#include <new>

#include "host_bytes.h"

namespace rig::agent {

void CudaPinning::pin(std::byte* p, std::uint64_t bytes) noexcept {
  assert(reinterpret_cast<std::uintptr_t>(p) % page_bytes() == 0);
  if (bytes == 0) return;
  const CudaDriver& d = gpu_->driver();
  CUresult rc = gpu_->context() != nullptr ? d.cuCtxSetCurrent(gpu_->context()) : CUDA_ERROR_INVALID_CONTEXT;
  if (rc == CUDA_SUCCESS) rc = d.cuMemHostRegister(p, whole_pages(bytes), CU_MEMHOSTREGISTER_PORTABLE);
  if (rc == CUDA_SUCCESS) {
    try {
      pinned_.insert(p);
      return;
    } catch (const std::bad_alloc&) {  // cannot remember it: unpinned again
      d.cuMemHostUnregister(p);
      return;
    }
  }
  // Copies from it still work, by the driver's pageable path (slower, synchronous with the
  // stream's earlier work).
  try {
    spdlog::debug("{} bytes of host memory left unpinned: {}", bytes, d.error("cuMemHostRegister", rc));
  } catch (...) {  // a message not logged
  }
}

void CudaPinning::unpin(std::byte* p) noexcept {
  if (pinned_.erase(p) == 0) return;
  const CudaDriver& d = gpu_->driver();
  if (d.cuCtxSetCurrent(gpu_->context()) == CUDA_SUCCESS) d.cuMemHostUnregister(p);
}

CudaPinning::~CudaPinning() {
  // The pool unpins every buffer before it frees it; any left would stay pinned, so go now.
  while (!pinned_.empty()) unpin(*pinned_.begin());
}

}  // namespace rig::agent
