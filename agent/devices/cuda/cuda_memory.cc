#include "devices/cuda/cuda_memory.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <new>

#include "devices/cuda/cuda_wait.h"

namespace rig::agent {

std::shared_ptr<CudaMemory> CudaMemory::allocate(std::shared_ptr<CudaGpus::Hold> gpu, std::uint32_t device,
                                                 std::uint64_t bytes, std::shared_ptr<Budget> budget, CUresult& rc) {
  rc = CUDA_SUCCESS;
  if (bytes > budget->left || gpu->context() == nullptr) return nullptr;
  const CudaDriver& d = gpu->driver();
  CUdeviceptr address = 0;
  rc = d.cuCtxSetCurrent(gpu->context());
  if (rc == CUDA_SUCCESS) rc = d.cuMemAlloc(&address, bytes);
  if (rc != CUDA_SUCCESS) return nullptr;
  budget->left -= bytes;  // given back by the destructor
  try {
    return std::make_shared<CudaMemory>(gpu, device, bytes, address, budget);
  } catch (const std::bad_alloc&) {
    d.cuMemFree(address);
    budget->left += bytes;
    return nullptr;
  }
}

CudaMemory::~CudaMemory() {
  budget_->left += bytes();
  const CudaDriver& d = gpu_->driver();
  // A lost GPU's memory goes with its context, which is destroyed once no job holds the GPU: not
  // freed here, where a stream the GPU was lost for (it waits on a lost GPU's work, quiesce)
  // may still hold it, and a free would wait for that stream.
  if (gpu_->lost() || gpu_->context() == nullptr) return;
  if (zeroed_ != nullptr) {
    // The zeroing is the one piece of stream work no handover holds this memory for (a copy's
    // handover holds it until the copy's value completed): freed only after it ended, which it
    // almost always has. cuMemFree "may" synchronise; this does not rest on it.
    std::chrono::steady_clock::time_point stuck_since{};
    const CUresult rc = wait_unless_lost(
        gpu_->gpus(), zeroing_waited_,
        [&] {
          d.cuCtxSetCurrent(gpu_->context());  // lost_among leaves none current
          return d.cuEventQuery(zeroed_);
        },
        stuck_since);
    if (rc == CUDA_ERROR_NOT_READY) {
      // Behind a wait on a lost GPU's work, which may never end: freed now, the zeroing could
      // still write into what is allocated there next. Left to the context (the job's end
      // gives this GPU's stream up, and the context goes once no job holds the GPU).
      try {
        spdlog::warn("GPU {}: {} bytes freed by the job left to the context: their zeroing waits on a lost GPU's work",
                     gpu_->ordinal(), bytes());
      } catch (...) {  // a message not logged
      }
      return;
    }
  }
  if (d.cuCtxSetCurrent(gpu_->context()) != CUDA_SUCCESS) return;
  if (zeroed_ != nullptr) d.cuEventDestroy(zeroed_);
  d.cuMemFree(address_);
}

}  // namespace rig::agent
