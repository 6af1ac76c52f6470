#include "cuda_memory.h"

#include <new>

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
  const CudaDriver& d = gpu_->driver();
  // A lost GPU's memory goes with its context, which is destroyed once no job holds the GPU: not
  // freed here, where a stream the GPU was lost for (it waits on a lost GPU's work, quiesce)
  // may still hold it, and a free would wait for that stream.
  if (!gpu_->lost() && d.cuCtxSetCurrent(gpu_->context()) == CUDA_SUCCESS) {
    if (zeroed_ != nullptr) {
      // The zeroing is the one piece of stream work no handover holds this memory for (a copy's
      // handover holds it until the copy's value completed): freed only after it ended, which it
      // almost always has. cuMemFree "may" synchronise; this does not rest on it.
      d.cuEventSynchronize(zeroed_);
      d.cuEventDestroy(zeroed_);
    }
    d.cuMemFree(address_);
  }
  budget_->left += bytes();
}

}  // namespace rig::agent
