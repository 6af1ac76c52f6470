// Memory of one GPU (cuMemAlloc), as a job holds it: charged to the job's budget there, zeroed
// by the device's stream before any copy it issues, and freed (cuMemFree, once the zeroing
// ended; every copy's handover holds the memory until its value completed) when the last holder
// lets go, unless the GPU is lost by then, or the zeroing waits on a lost GPU's work: its memory
// then goes with the context, destroyed once no job holds the GPU. Only the GPU's copies reach
// it: host() is nullptr.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>

#include "devices/cuda/cuda_gpus.h"
#include "devices/memory.h"

namespace rig::agent {

class CudaMemory final : public Memory {
 public:
  // nullptr when `bytes` is past what the budget has left, or the GPU has no room
  // (CUDA_ERROR_OUT_OF_MEMORY) or refused (rc says which).
  static std::shared_ptr<CudaMemory> allocate(std::shared_ptr<CudaGpus::Hold> gpu, std::uint32_t device,
                                              std::uint64_t bytes, std::shared_ptr<Budget> budget, CUresult& rc);
  CudaMemory(std::shared_ptr<CudaGpus::Hold> gpu, std::uint32_t device, std::uint64_t bytes, CUdeviceptr address,
             std::shared_ptr<Budget> budget)
      : Memory(device, bytes, nullptr), gpu_(std::move(gpu)), address_(address), budget_(std::move(budget)) {}
  ~CudaMemory() override;

  // The allocation's address in the process's unified address space.
  CUdeviceptr address() const { return address_; }
  // Recorded on the owning GPU's stream after the zeroing: another GPU's stream waits for it
  // before its first copy into or out of this memory (nullptr: not zeroed yet). Owned: the
  // destructor destroys it.
  CUevent zeroed() const { return zeroed_; }
  int ordinal() const { return gpu_->ordinal(); }  // the GPU it lives on
  // `waited`: the other GPUs whose work the stream waited on before the zeroing (bit j: GPU j):
  // a free waits for the zeroing only until one of them has been lost for the grace
  // (wait_unless_lost), since a wait on a lost GPU's work may never end.
  void set_zeroed(CUevent e, std::uint64_t waited) {
    zeroed_ = e;
    zeroing_waited_ = waited;
  }

 private:
  std::shared_ptr<CudaGpus::Hold> gpu_;  // keeps the context the allocation lives in
  CUdeviceptr address_;
  std::shared_ptr<Budget> budget_;
  CUevent zeroed_ = nullptr;
  std::uint64_t zeroing_waited_ = 0;
};

}  // namespace rig::agent
