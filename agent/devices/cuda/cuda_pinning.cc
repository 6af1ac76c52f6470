#include "devices/cuda/cuda_pinning.h"

#include <spdlog/spdlog.h>

#include <cassert>
#include <cstdint>
#include <exception>
#include <new>
#include <string>

#include "devices/host_bytes.h"

namespace rig::agent {

CudaPinning::CudaPinning(const CudaGpus& gpus) : gpus_(gpus), contexts_(gpus.gpus().size()) {}

CUresult CudaPinning::register_in(int ordinal, std::byte* p, std::uint64_t bytes) noexcept {
  const CudaDriver& d = gpus_.driver();
  Context& c = contexts_[ordinal];
  if (c.gpu == nullptr) {
    try {
      c.gpu = std::make_unique<CudaGpus::Hold>(gpus_, ordinal);
    } catch (const std::exception&) {  // no memory for it: left unpinned, copies still work
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  if (c.gpu->lost() || c.gpu->context() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  const char* call = "cuCtxSetCurrent";
  CUresult rc = d.cuCtxSetCurrent(c.gpu->context());
  if (rc == CUDA_SUCCESS) {
    call = "cuMemHostRegister";
    rc = d.cuMemHostRegister(p, whole_pages(bytes), CU_MEMHOSTREGISTER_PORTABLE);
  }
  if (rc != CUDA_SUCCESS && cuda_error_is_sticky(rc)) {
    try {
      c.gpu->lose(d.error(call, rc));
    } catch (...) {  // no memory for the words: the next call in the GPU's context finds it
    }
  }
  return rc;
}

void CudaPinning::release_if_unused(int ordinal) noexcept {
  Context& c = contexts_[ordinal];
  if (c.pinned == 0) c.gpu.reset();  // a lost GPU reopens without this pinning's hold
}

void CudaPinning::pin(std::byte* p, std::uint64_t bytes) noexcept {
  assert(reinterpret_cast<std::uintptr_t>(p) % page_bytes() == 0);
  if (bytes == 0) return;
  CUresult rc = CUDA_ERROR_NO_DEVICE;
  for (int ordinal = 0; ordinal < static_cast<int>(contexts_.size()); ++ordinal) {
    rc = register_in(ordinal, p, bytes);
    if (rc == CUDA_SUCCESS) {
      try {
        pinned_.emplace(p, ordinal);
        ++contexts_[ordinal].pinned;
        return;
      } catch (const std::bad_alloc&) {  // cannot remember it: unpinned again
        gpus_.driver().cuMemHostUnregister(p);
        rc = CUDA_ERROR_OUT_OF_MEMORY;
      }
    }
    release_if_unused(ordinal);
    // A GPU that is lost, or that a sticky error lost just now, leaves the pinning to the next;
    // any other refusal (no memory to pin) would be the same there.
    if (rc != CUDA_ERROR_INVALID_CONTEXT && !cuda_error_is_sticky(rc)) break;
  }
  // Copies from it still work, by the driver's pageable path (slower, synchronous with the
  // stream's earlier work). The operator is told once per job (the GPU's copies are then several
  // times slower); the rest at debug.
  try {
    const std::string why = rc == CUDA_ERROR_INVALID_CONTEXT ? std::string("every GPU is lost")
                                                             : gpus_.driver().error("cuMemHostRegister", rc);
    if (!said_unpinned_) {
      said_unpinned_ = true;
      spdlog::warn("{} bytes of host memory left unpinned ({}): the job's copies between it and its GPUs take the "
                   "driver's pageable path, slower and waiting for the stream's earlier work; further ones of this "
                   "job at debug",
                   bytes, why);
    } else {
      spdlog::debug("{} bytes of host memory left unpinned: {}", bytes, why);
    }
  } catch (...) {  // a message not logged
  }
}

void CudaPinning::unpin(std::byte* p) noexcept {
  const auto it = pinned_.find(p);
  if (it == pinned_.end()) return;
  const int ordinal = it->second;
  pinned_.erase(it);
  Context& c = contexts_[ordinal];  // held while anything is pinned under it
  const CudaDriver& d = gpus_.driver();
  if (d.cuCtxSetCurrent(c.gpu->context()) == CUDA_SUCCESS) d.cuMemHostUnregister(p);
  --c.pinned;
  release_if_unused(ordinal);
}

void CudaPinning::leave_to_given_up_gpu(std::byte* p, int gpu) noexcept {
  const auto it = pinned_.find(p);
  if (it == pinned_.end() || it->second != gpu) return;
  assert(gpus_.lost(gpu));  // given up, so lost: its context is destroyed once no one holds it
  pinned_.erase(it);
  --contexts_[gpu].pinned;
  release_if_unused(gpu);  // the registration goes with the context
}

CudaPinning::~CudaPinning() {
  // The pool unpins every buffer before it frees it; any left would stay pinned, so go now.
  while (!pinned_.empty()) unpin(pinned_.begin()->first);
}

}  // namespace rig::agent
