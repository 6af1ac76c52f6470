#include "cuda_pinning.h"

#include <spdlog/spdlog.h>

#include <cassert>
#include <cstdint>
#include <exception>
#include <new>

#include "host_bytes.h"

namespace rig::agent {

void CudaPinning::pin(std::byte* p, std::uint64_t bytes) noexcept {
  assert(reinterpret_cast<std::uintptr_t>(p) % page_bytes() == 0);
  if (bytes == 0) return;
  const CudaDriver& d = gpus_.driver();
  if (gpu_ == nullptr) {
    try {
      gpu_ = std::make_unique<CudaGpus::Hold>(gpus_, 0);
    } catch (const std::exception&) {  // no memory for it: left unpinned, copies still work
      return;
    }
  }
  std::string lost;
  bool open = false;
  try {
    open = !gpu_->lost(lost) && gpu_->context() != nullptr;
  } catch (const std::exception&) {  // no memory for the words: not pinned
  }
  const char* call = "cuCtxSetCurrent";
  CUresult rc = open ? d.cuCtxSetCurrent(gpu_->context()) : CUDA_ERROR_INVALID_CONTEXT;
  if (rc == CUDA_SUCCESS) {
    call = "cuMemHostRegister";
    rc = d.cuMemHostRegister(p, whole_pages(bytes), CU_MEMHOSTREGISTER_PORTABLE);
  }
  if (rc == CUDA_SUCCESS) {
    try {
      pinned_.insert(p);
      return;
    } catch (const std::bad_alloc&) {  // cannot remember it: unpinned again
      d.cuMemHostUnregister(p);
    }
  }
  try {
    if (cuda_error_is_sticky(rc)) gpu_->lose(d.error(call, rc));
  } catch (...) {  // no memory for the words: the next call in the GPU's context finds it
  }
  // Holding nothing pinned, the job does not hold the GPU (a lost one reopens without it).
  if (pinned_.empty()) gpu_.reset();
  if (rc == CUDA_SUCCESS) return;
  // Copies from it still work, by the driver's pageable path (slower, synchronous with the
  // stream's earlier work).
  try {
    spdlog::debug("{} bytes of host memory left unpinned: {}", bytes,
                  !lost.empty() ? lost : d.error(call, rc));
  } catch (...) {  // a message not logged
  }
}

void CudaPinning::unpin(std::byte* p) noexcept {
  if (pinned_.erase(p) == 0) return;  // pinned only while gpu_ is held
  const CudaDriver& d = gpus_.driver();
  if (d.cuCtxSetCurrent(gpu_->context()) == CUDA_SUCCESS) d.cuMemHostUnregister(p);
  if (pinned_.empty()) gpu_.reset();  // nothing pinned: the GPU is not held for it
}

CudaPinning::~CudaPinning() {
  // The pool unpins every buffer before it frees it; any left would stay pinned, so go now.
  while (!pinned_.empty()) unpin(*pinned_.begin());
}

}  // namespace rig::agent
